// `graft train` under mpirun: what every rank must agree on before it trains (Note [Ranks that agree]).
//
// Note [Ranks that agree]
// mpirun can give each rank its own flags (`mpirun -np 1 graft train --lr 0.05 : -np 1 graft train
// --lr 0.5`), and nothing in DDP notices: it checks the model's parameter names, shapes and dtypes
// and broadcasts rank 0's weights (Note [DDP buckets]), but another learning rate, optimiser, seed
// (another shuffle: shards that overlap) or dropout lets the replicas drift apart, and --save,
// --log, --report and --json are rank 0's alone, so given on another rank they would be dropped
// without a word. At start-up every rank therefore gathers every rank's run-shaping flags
// (rank_flags: after the model's defaults are filled in) and, when any differs, every rank throws
// the same error naming each flag that differs and each rank's value; all ranks meet at the one
// all-gather, so none is left waiting. --threads, --workers and --progress may differ: they change
// how fast a rank computes and what it prints, not what it computes.
// A resumed run checks its checkpoint as well: files at the same path may differ between nodes,
// and DDP's broadcast of rank 0's weights happened at its construction, before the resume. Each
// rank loads --resume, then the ranks compare the epochs it had finished and a 64-bit FNV-1a hash
// of the model's parameters and buffers (weights_checksum); a rank that cannot load its file
// makes every rank stop with that rank's error. --init-from's state dict is loaded and compared the
// same way (Note [Starting from a state dict] in run_setup.h): its path is one of the flags above, and
// the files behind it must hold the same weights (DDP's broadcast would hide a difference).
#pragma once

#include <graft/graft.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config.h"

namespace graft::cli {

// The flags every rank must agree on, as (flag, value) in a fixed order: {"--lr", "0.05"}, ...
// Numbers print as the shortest text that reads back as the same double; an unset path is "".
std::vector<std::pair<std::string, std::string>> rank_flags(const TrainConfig& cfg);

// Under a world of more than one rank: throws graft::Error on every rank when the ranks' rank_flags
// differ, naming each flag and each rank's value ("--lr: rank 0 has 0.05, rank 1 has 0.5"). A
// collective: every rank must call it.
void check_ranks_agree(const TrainConfig& cfg);

// 64-bit FNV-1a over the bytes of the module's parameters, then its buffers, in registration order.
uint64_t weights_checksum(const nn::Module& module);

// Runs `load` on every rank: it loads the file of `flag` (--resume or --init-from) at `path` into
// `model` and returns the epochs the run had finished (0 for --init-from). Then checks that all
// ranks loaded the same epochs and weights (weights_checksum). A rank whose `load` throws makes
// every rank throw (its own error there, "rank r could not ..." elsewhere). A collective under more
// than one rank.
int64_t load_on_every_rank(const std::string& flag, const std::string& path, const nn::Module& model, int world,
                           const std::function<int64_t()>& load);

}  // namespace graft::cli
