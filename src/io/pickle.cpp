// pickle_load: PyTorch's checkpoint files read, both formats (Note [PyTorch's file format] and
// Note [Safe unpickling] in graft/io/pickle.h). The pickler, pickle_save and write_script_archive,
// is pickle_writer.cpp; what both share, pickle_internal.h.
#include "graft/io/pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "io/file_util.h"
#include "io/pickle_internal.h"
#include "io/zip_archive.h"

namespace graft {
namespace io::detail {
namespace {

using namespace pickle_opcodes;  // MARK, STOP, ... (pickle_internal.h)

// ---- the unpickler ------------------------------------------------------------------------------

// The callables of the allow-list (Note [Safe unpickling]).
enum class Global {
  OrderedDict,
  RebuildTensorV2,        // torch._utils._rebuild_tensor_v2
  RebuildTensor,          // torch._utils._rebuild_tensor (before 1.0)
  RebuildParameter,       // torch._utils._rebuild_parameter
  RebuildParameterState,  // torch._utils._rebuild_parameter_with_state (2.x)
  StorageType,            // torch.FloatStorage, ...
  ScriptClass,            // __torch__.* (LibTorch archives only)
  PassThrough,            // torch.jit._pickle.build_*list / restore_type_tag (LibTorch's pickler writes
                          // them for typed lists and dicts): returns its first argument
};

// One entry of the unpickler's stack. Values are IValues; the other kinds only live between the
// opcodes that make and consume them (a global before its REDUCE, a storage before its tensor, a
// tuple holding either, as the persistent id ('storage', torch.FloatStorage, ...) does).
struct Item {
  enum class Kind { Value, Global, Storage, RawTuple };
  Kind kind = Kind::Value;
  IValue value;
  Global global = Global::OrderedDict;
  DType dtype = DType::Float32;  // StorageType, Storage
  std::string name;              // ScriptClass: the qualified name
  Tensor storage;                // Storage: a 1-d tensor over the whole storage
  std::vector<Item> items;       // RawTuple
  int depth = 0;                 // nesting of containers below and including this one
  uint64_t cost = 1;             // what copying it costs: a string's bytes, a tuple's items' costs
};

// Where a persistent id's storage comes from: a zip entry data/<key>, or (the legacy format) the
// bytes after the pickles. load() returns a 1-d tensor of at least `numel` elements of `dtype`, or
// throws graft::Error.
class StorageSource {
 public:
  virtual ~StorageSource() = default;
  virtual Tensor load(const std::string& key, DType dtype, int64_t numel) = 0;
};

class Unpickler {
 public:
  // Reads the pickle starting at data[start] (the whole buffer is data[0, size)); `where` names it
  // in errors ("archive/data.pkl").
  Unpickler(const uint8_t* data, size_t size, size_t start, StorageSource* storages, std::string where, std::string op,
            bool script_objects)
      : p_(data),
        n_(size),
        pos_(start),
        op_at_(start),
        source_(storages),
        where_(std::move(where)),
        op_(std::move(op)),
        script_objects_(script_objects) {}

  // After run(): the offset just past the pickle's STOP.
  size_t end() const { return pos_; }

  IValue run() {
    while (true) {
      const size_t at = pos_;
      const uint8_t code = u8();
      op_at_ = at;
      switch (code) {
        case PROTO: {
          const uint8_t v = u8();
          if (v > 5) fail("a pickle protocol of 2 to 5", "protocol " + std::to_string(v), "");
          break;
        }
        case FRAME: (void)take(8); break;
        case STOP: {
          if (stack_.size() != 1) fail("one value on the stack at STOP", std::to_string(stack_.size()) + " values", "");
          return to_value(pop());
        }
        case MARK: marks_.push_back(stack_.size()); break;
        case POP: (void)pop(); break;
        case POP_MARK: (void)pop_to_mark(); break;
        case DUP: {
          if (stack_.empty()) fail("a value to duplicate", "an empty stack", "");
          charge(stack_.back().cost);
          stack_.push_back(stack_.back());
          break;
        }
        case NONE: push(IValue()); break;
        case NEWTRUE: push(IValue(true)); break;
        case NEWFALSE: push(IValue(false)); break;
        case BININT: push(IValue(static_cast<int64_t>(static_cast<int32_t>(le(4))))); break;
        case BININT1: push(IValue(static_cast<int64_t>(u8()))); break;
        case BININT2: push(IValue(static_cast<int64_t>(le(2)))); break;
        case LONG1: push(IValue(long_int(u8()))); break;
        case LONG4: push(IValue(long_int(le(4)))); break;
        case BINFLOAT: {
          const uint64_t bits = be64();
          double d = 0;
          std::memcpy(&d, &bits, sizeof d);
          push(IValue(d));
          break;
        }
        case SHORT_BINUNICODE:
        case SHORT_BINBYTES: push_string(str(u8())); break;
        case BINUNICODE:
        case BINBYTES: push_string(str(le(4))); break;
        case BINUNICODE8:
        case BINBYTES8: push_string(str(le(8))); break;
        case EMPTY_TUPLE: push_tuple({}); break;
        case TUPLE: push_tuple(pop_to_mark()); break;
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
          const size_t k = code - TUPLE1 + 1;
          if (stack_.size() < k) fail(std::to_string(k) + " values for a tuple", std::to_string(stack_.size()), "");
          std::vector<Item> items(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(k)),
                                  std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - k);
          push_tuple(std::move(items));
          break;
        }
        case EMPTY_LIST: push_value(IValue(impl::GenericList(AnyType::get())), 1); break;
        case LIST: {
          impl::GenericList list(AnyType::get());
          auto items = pop_to_mark();
          int depth = 0;
          for (auto& it : items) {
            depth = std::max(depth, it.depth);
            list.push_back(placed(to_value(std::move(it)), nullptr));
          }
          push_value(IValue(list), depth + 1);
          break;
        }
        case APPEND:
        case APPENDS: {
          std::vector<Item> items;
          if (code == APPEND) {
            items.push_back(pop());
          } else {
            items = pop_to_mark();
          }
          Item& target = top("a list to append to");
          if (target.kind != Item::Kind::Value || !target.value.isList() || target.value.isIntList() ||
              target.value.isDoubleList() || target.value.isTensorList()) {
            fail("a list below APPEND", describe(target), "");
          }
          auto list = target.value.toList();
          check_open(list.impl().get());
          for (auto& it : items) {
            target.depth = std::max(target.depth, it.depth + 1);
            check_depth(target.depth);
            list.push_back(placed(to_value(std::move(it)), list.impl().get()));
          }
          break;
        }
        case EMPTY_DICT: push_value(IValue(impl::GenericDict(AnyType::get(), AnyType::get())), 1); break;
        case DICT: {
          auto items = pop_to_mark();
          push_value(IValue(impl::GenericDict(AnyType::get(), AnyType::get())), 1);
          set_items(std::move(items));
          break;
        }
        case SETITEM: {
          std::vector<Item> items(2);
          items[1] = pop();
          items[0] = pop();
          set_items(std::move(items));
          break;
        }
        case SETITEMS: set_items(pop_to_mark()); break;
        case BINPUT: memoize(le(1)); break;
        case LONG_BINPUT: memoize(le(4)); break;
        case MEMOIZE: {
          memoize(memo_.size());
          break;
        }
        case BINGET: get(le(1)); break;
        case LONG_BINGET: get(le(4)); break;
        case GLOBAL: {
          std::string module = line();
          std::string name = line();
          push_global(module, name);
          break;
        }
        case STACK_GLOBAL: {
          Item name = pop();
          Item module = pop();
          if (!is_string(module) || !is_string(name)) fail("two strings for STACK_GLOBAL", describe(name), "");
          push_global(module.value.toStringRef(), name.value.toStringRef());
          break;
        }
        case BINPERSID: persistent_load(pop()); break;
        case REDUCE: {
          Item args = pop();
          Item callable = pop();
          reduce(std::move(callable), std::move(args));
          break;
        }
        case NEWOBJ: {
          Item args = pop();
          Item cls = pop();
          if (cls.kind != Item::Kind::Global || cls.global != Global::ScriptClass) {
            fail("a TorchScript class for NEWOBJ", describe(cls), "");
          }
          reduce(std::move(cls), std::move(args));
          break;
        }
        case BUILD: {
          Item state = pop();
          build(top("an object to BUILD"), std::move(state));
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", code);
          fail("a pickle opcode torch.save writes", std::string("opcode ") + hex,
               "the file is damaged, or was written by a pickler graft does not read");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& expected, const std::string& got, std::string hint) const {
    if (hint.empty()) hint = "the file is damaged or is no checkpoint torch.save wrote";
    throw Error(op_, expected, got + " at byte " + std::to_string(op_at_) + " of " + where_, hint);
  }

  // -- reading bytes
  uint8_t u8() {
    need(1);
    return p_[pos_++];
  }
  void need(uint64_t k) const {
    if (k > n_ - pos_) {
      throw Error(op_, std::to_string(k) + " more bytes of " + where_,
                  "the pickle ending at byte " + std::to_string(n_) + " (an opcode at byte " + std::to_string(op_at_) + ")",
                  "the file is truncated or damaged");
    }
  }
  const uint8_t* take(uint64_t k) {
    need(k);
    const uint8_t* at = p_ + pos_;
    pos_ += static_cast<size_t>(k);
    return at;
  }
  uint64_t le(int k) {
    const uint8_t* b = take(static_cast<uint64_t>(k));
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  uint64_t be64() {
    const uint8_t* b = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | b[i];
    return v;
  }
  std::string str(uint64_t k) {
    const uint8_t* b = take(k);
    return std::string(reinterpret_cast<const char*>(b), static_cast<size_t>(k));
  }
  std::string line() {
    const size_t start = pos_;
    while (true) {
      if (u8() == '\n') break;
    }
    return std::string(reinterpret_cast<const char*>(p_ + start), pos_ - 1 - start);
  }
  // Python's LONG1/LONG4: k bytes of a little-endian two's-complement integer.
  int64_t long_int(uint64_t k) {
    if (k > 8) {
      (void)take(k);
      fail("an integer of at most 64 bits", "one of " + std::to_string(k) + " bytes",
           "graft's integers are 64-bit: store larger numbers as floats or strings");
    }
    const uint8_t* b = take(k);
    uint64_t v = 0;
    for (uint64_t i = k; i-- > 0;) v = (v << 8) | b[i];
    if (k > 0 && k < 8 && (b[k - 1] & 0x80)) v |= ~uint64_t{0} << (8 * k);  // sign-extend
    return static_cast<int64_t>(v);
  }

  // -- the stack
  void check_depth(int depth) const {
    if (depth > kMaxPickleDepth) {
      fail("containers nested at most " + std::to_string(kMaxPickleDepth) + " deep", "deeper nesting",
           "the file is hostile or damaged");
    }
  }
  void push(IValue v) { push_value(std::move(v), 0); }
  void push_string(std::string v) {
    const uint64_t cost = 1 + v.size();
    push(IValue(std::move(v)));
    stack_.back().cost = cost;
  }
  void memoize(uint64_t key) {
    const Item& it = top("a value to memoize");
    charge(it.cost);
    memo_[key] = it;
  }
  // Note [Pickle bombs]
  // A memo get copies a value in a few bytes: a megabyte string fetched a million times, or a tuple
  // of tuples of them, would take terabytes, and a dict hashing a memoized megabyte key a million
  // times would never finish. Every copy and every key hashed is charged its size, and a pickle
  // may do at most kWorkPerByte units of work per byte of the file (torch.save's pickles do a few).
  static constexpr uint64_t kWorkPerByte = 64;
  void charge(uint64_t units) {
    work_ += units;
    if (work_ > kWorkPerByte * n_ + (uint64_t{1} << 20)) {
      fail("work in proportion to the pickle's " + std::to_string(n_) + " bytes (Note [Pickle bombs])",
           "far more: a value copied from the memo over and over", "the file is hostile or damaged");
    }
  }
  void push_value(IValue v, int depth) {
    check_depth(depth);
    Item it;
    it.value = std::move(v);
    it.depth = depth;
    stack_.push_back(std::move(it));
  }
  Item pop() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) fail("a value on the stack", "none", "");
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  Item& top(const char* what) {
    if (stack_.empty()) fail(what, "an empty stack", "");
    return stack_.back();
  }
  std::vector<Item> pop_to_mark() {
    if (marks_.empty()) fail("a MARK before this opcode", "none", "");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Item> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(mark)),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }
  void get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("a memo entry put before", "memo key " + std::to_string(key), "");
    charge(it->second.cost);
    stack_.push_back(it->second);
  }
  void push_tuple(std::vector<Item> items) {
    Item t;
    t.kind = Item::Kind::RawTuple;
    for (const auto& it : items) t.depth = std::max(t.depth, it.depth + 1);
    t.depth = std::max(t.depth, 1);
    check_depth(t.depth);
    for (const auto& it : items) t.cost += it.cost;
    t.items = std::move(items);
    stack_.push_back(std::move(t));
  }
  static bool is_string(const Item& it) { return it.kind == Item::Kind::Value && it.value.isString(); }
  static std::string describe(const Item& it) {
    switch (it.kind) {
      case Item::Kind::Value: return "a " + it.value.tagKind();
      case Item::Kind::Global: return "a global";
      case Item::Kind::Storage: return "a storage";
      case Item::Kind::RawTuple: return "a Tuple";
    }
    return "?";
  }
  // An item as a value: tuples become Tuples; a global or a storage cannot be one.
  IValue to_value(Item it) {
    if (it.kind == Item::Kind::Value) return std::move(it.value);
    if (it.kind == Item::Kind::RawTuple) {
      std::vector<IValue> elements;
      charge(it.items.size());
      elements.reserve(it.items.size());
      for (auto& e : it.items) elements.push_back(placed(to_value(std::move(e)), nullptr));
      return IValue(ivalue::Tuple::create(std::move(elements)));
    }
    fail("a value", describe(it) + " used as a value", "");
  }
  void set_items(std::vector<Item> items) {
    if (items.size() % 2 != 0) fail("key-value pairs", std::to_string(items.size()) + " items", "");
    Item& target = top("a dict to set items in");
    if (target.kind != Item::Kind::Value || !target.value.isGenericDict()) fail("a dict below SETITEMS", describe(target), "");
    auto dict = target.value.toGenericDict();
    check_open(dict.impl().get());
    for (size_t i = 0; i < items.size(); i += 2) {
      target.depth = std::max({target.depth, items[i].depth + 1, items[i + 1].depth + 1});
      charge(items[i].cost);  // the key is hashed
      check_depth(target.depth);
      IValue key = to_value(std::move(items[i]));
      if (!(key.isString() || key.isInt() || key.isDouble() || key.isBool())) {
        fail("a dict key that is a str, int, float or bool", "a key holding " + key.tagKind(), "");
      }
      // A duplicate key keeps the last value, as Python's dict does.
      dict.insert_or_assign(std::move(key), placed(to_value(std::move(items[i + 1])), dict.impl().get()));
    }
  }

  // Note [No cycles]
  // Python's pickle can build a container that holds itself (a list appended to itself, two dicts
  // holding each other); torch.save never writes one, and an IValue cycle would never be freed nor
  // finish printing. So a list or dict, once placed in another container (or a tuple), is sealed:
  // filling it afterwards is an error, as is placing a container in itself. Every cycle needs one
  // of the two. The sealed containers are kept alive here, so no new one reuses an address.
  static std::shared_ptr<const void> container_of(const IValue& v) {
    if (v.isGenericDict()) return v.toGenericDict().impl();
    if (v.isList() && !v.isIntList() && !v.isDoubleList() && !v.isTensorList()) return v.toList().impl();
    return nullptr;
  }
  void check_open(const void* target) const {
    if (sealed_.count(target)) {
      fail("a container filled before it is placed in another", "one filled after",
           "the file holds a cycle, or was not written by torch.save");
    }
  }
  // `v`, now placed in the container `into` (null for a new list or tuple): sealed.
  IValue placed(IValue v, const void* into) {
    if (auto c = container_of(v)) {
      if (c.get() == into) fail("a container placed in another", "one placed in itself", "the file holds a cycle");
      sealed_.emplace(c.get(), c);
    }
    return v;
  }

  // -- globals, calls and objects
  void push_global(const std::string& module, const std::string& name) {
    Item g;
    g.kind = Item::Kind::Global;
    if (module == "collections" && name == "OrderedDict") {
      g.global = Global::OrderedDict;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
      g.global = Global::RebuildTensorV2;
    } else if (module == "torch._utils" && name == "_rebuild_tensor") {
      g.global = Global::RebuildTensor;
    } else if (module == "torch._utils" && name == "_rebuild_parameter") {
      g.global = Global::RebuildParameter;
    } else if (module == "torch._utils" && name == "_rebuild_parameter_with_state") {
      g.global = Global::RebuildParameterState;
    } else if (module == "torch" && storage_dtype(name, g.dtype)) {
      g.global = Global::StorageType;
    } else if (script_objects_ && module.rfind("__torch__", 0) == 0) {
      g.global = Global::ScriptClass;
      g.name = module + "." + name;
    } else if (module == "torch.jit._pickle" &&
               (name == "build_intlist" || name == "build_doublelist" || name == "build_boollist" ||
                name == "build_tensorlist" || name == "restore_type_tag")) {
      g.global = Global::PassThrough;
    } else {
      fail("a global of graft's allow-list (collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
           "torch._utils._rebuild_parameter, torch.<dtype>Storage, torch.jit._pickle's type tags)",
           "the global " + module + "." + name,
           "graft never runs code from a checkpoint: save plain data (a state_dict(), tensors, lists, "
           "dicts, numbers, strings) rather than modules or other Python objects");
    }
    stack_.push_back(std::move(g));
  }
  static bool storage_dtype(const std::string& name, DType& dtype) {
    for (const auto& s : kStorageNames) {
      if (name == s.name) {
        dtype = s.dtype;
        return true;
      }
    }
    return false;
  }

  // BINPERSID: ('storage', <storage type>, key, location, numel), and in the legacy format a sixth
  // item, the view metadata (None) -> the storage named `key`, read once however many tensors
  // name it.
  void persistent_load(Item pid) {
    const size_t n = pid.items.size();
    if (pid.kind != Item::Kind::RawTuple || (n != 5 && n != 6) || !is_string(pid.items[0]) ||
        pid.items[0].value.toStringRef() != "storage" || pid.items[1].kind != Item::Kind::Global ||
        pid.items[1].global != Global::StorageType || !is_string(pid.items[2]) || !is_string(pid.items[3]) ||
        pid.items[4].kind != Item::Kind::Value || !pid.items[4].value.isInt() ||
        (n == 6 && (pid.items[5].kind != Item::Kind::Value || !pid.items[5].value.isNone()))) {
      fail("a persistent id ('storage', torch.<dtype>Storage, key, location, numel)", describe(pid), "");
    }
    if (!source_) fail("no persistent id in a pickle without storages", "a storage reference", "");
    const DType dtype = pid.items[1].dtype;
    const std::string& key = pid.items[2].value.toStringRef();
    const int64_t numel = pid.items[4].value.toInt();
    Item s;
    s.kind = Item::Kind::Storage;
    s.dtype = dtype;
    auto cached = storages_.find(key);
    if (cached != storages_.end()) {
      if (cached->second.dtype() != dtype) {
        fail("one dtype for storage " + key, std::string(dtype_name(dtype)) + " and " + dtype_name(cached->second.dtype()), "");
      }
      s.storage = cached->second;
    } else {
      if (numel < 0) fail("a storage of 0 or more elements", "numel " + std::to_string(numel), "");
      Tensor t = source_->load(key, dtype, numel);
      storages_.emplace(key, t);
      storage_impls_.insert(t.unsafeGetTensorImpl());
      s.storage = t;
    }
    stack_.push_back(std::move(s));
  }
  std::vector<int64_t> int_tuple(const Item& it, const char* what) const {
    std::vector<int64_t> out;
    if (it.kind != Item::Kind::RawTuple) fail(std::string("a tuple of ints for ") + what, describe(it), "");
    for (const auto& e : it.items) {
      if (e.kind != Item::Kind::Value || !e.value.isInt()) fail(std::string("ints in ") + what, describe(e), "");
      out.push_back(e.value.toInt());
    }
    return out;
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  Tensor rebuild_tensor(const std::vector<Item>& args, bool v2) {
    if (args.size() < 4 || (v2 && args.size() < 6)) {
      fail(v2 ? "_rebuild_tensor_v2's 6 or 7 arguments" : "_rebuild_tensor's 4 arguments",
           std::to_string(args.size()) + " arguments", "");
    }
    if (args[0].kind != Item::Kind::Storage || !storage_impls_.count(args[0].storage.unsafeGetTensorImpl())) {
      fail("a storage as the first argument of _rebuild_tensor", describe(args[0]), "");
    }
    if (args[1].kind != Item::Kind::Value || !args[1].value.isInt()) fail("an int storage offset", describe(args[1]), "");
    const Tensor& storage = args[0].storage;
    const int64_t offset = args[1].value.toInt();
    const auto sizes = int_tuple(args[2], "the size");
    const auto strides = int_tuple(args[3], "the stride");
    if (sizes.size() != strides.size()) {
      fail("as many strides as sizes", std::to_string(strides.size()) + " strides for " + std::to_string(sizes.size()) + " sizes", "");
    }
    // The last element the tensor reaches must lie in the storage (checked without overflow).
    const int64_t capacity = storage.numel();
    if (offset < 0 || offset > capacity) fail("a storage offset within the storage of " + std::to_string(capacity), std::to_string(offset), "");
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0) fail("non-negative sizes and strides", "size " + std::to_string(sizes[d]) + ", stride " + std::to_string(strides[d]), "");
      if (sizes[d] == 0) empty = true;
    }
    int64_t numel = 1;
    if (!empty) {
      int64_t last = offset;  // the furthest element reached
      for (size_t d = 0; d < sizes.size(); ++d) {
        const int64_t room = capacity - 1 - last;
        if (strides[d] != 0 && sizes[d] - 1 > room / strides[d]) {
          fail("a tensor inside its storage of " + std::to_string(capacity) + " elements",
               "sizes and strides reaching past it", "");
        }
        last += (sizes[d] - 1) * strides[d];
        if (numel > std::numeric_limits<int64_t>::max() / sizes[d]) fail("a tensor of fewer than 2^63 elements", "more", "");
        numel *= sizes[d];
      }
      if (last >= capacity) fail("a tensor inside its storage", "one reaching past it", "");
    }
    auto impl = std::make_shared<TensorImpl>(storage.impl().storage, offset, IntArrayRef(sizes), IntArrayRef(strides), storage.dtype());
    Tensor t(std::move(impl));
    if (v2 && args[4].kind == Item::Kind::Value && args[4].value.isBool() && args[4].value.toBool()) {
      require_grad(t);
    }
    return t;
  }
  void require_grad(Tensor& t) const {
    if (!t.is_floating_point()) fail("requires_grad only on a floating-point tensor", dtype_name(t.dtype()), "");
    t.set_requires_grad(true);
  }

  void reduce(Item callable, Item args) {
    if (callable.kind != Item::Kind::Global) fail("a global to call", describe(callable), "");
    if (args.kind != Item::Kind::RawTuple) fail("a tuple of arguments", describe(args), "");
    auto& a = args.items;
    switch (callable.global) {
      case Global::OrderedDict:
        if (!a.empty()) fail("OrderedDict() without arguments", std::to_string(a.size()) + " arguments", "");
        push_value(IValue(impl::GenericDict(AnyType::get(), AnyType::get())), 1);
        return;
      case Global::RebuildTensorV2:
      case Global::RebuildTensor:
        push(IValue(rebuild_tensor(a, callable.global == Global::RebuildTensorV2)));
        return;
      case Global::RebuildParameter:
      case Global::RebuildParameterState: {
        if (a.size() < 2 || a[0].kind != Item::Kind::Value || !a[0].value.isTensor() || a[1].kind != Item::Kind::Value ||
            !a[1].value.isBool()) {
          fail("_rebuild_parameter(tensor, requires_grad, hooks)", std::to_string(a.size()) + " arguments", "");
        }
        Tensor t = a[0].value.toTensor();
        if (a[1].value.toBool()) require_grad(t);
        push(IValue(t));
        return;
      }
      case Global::ScriptClass: {
        impl::GenericDict object(AnyType::get(), AnyType::get());
        object.insert(kScriptClassKey, callable.name);
        push_value(IValue(object), 1);
        return;
      }
      case Global::PassThrough: {
        if (a.empty()) fail("an argument", "none", "");
        stack_.push_back(std::move(a[0]));
        return;
      }
      case Global::StorageType: break;
    }
    fail("a callable global", "a storage type called", "");
  }

  // BUILD: an OrderedDict's attributes are dropped; a TorchScript object takes its attributes
  // (a dict of them, or the single value __setstate__ receives, stored under "__state__").
  void build(Item& target, Item state) {
    if (target.kind != Item::Kind::Value || !target.value.isGenericDict()) fail("an object below BUILD", describe(target), "");
    auto dict = target.value.toGenericDict();
    const bool object = !dict.empty() && dict.begin()->key().isString() && dict.begin()->key().toStringRef() == kScriptClassKey;
    if (!object) return;  // an OrderedDict's __dict__ (a state dict's _metadata)
    check_open(dict.impl().get());
    target.depth = std::max(target.depth, state.depth + 1);
    check_depth(target.depth);
    IValue s = placed(to_value(std::move(state)), dict.impl().get());
    if (s.isGenericDict()) {
      for (const auto& e : s.toGenericDict()) dict.insert_or_assign(e.key(), e.value());
    } else {
      dict.insert_or_assign("__state__", s);
    }
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_;
  size_t op_at_;
  StorageSource* source_;
  std::string where_;
  std::string op_;
  bool script_objects_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  uint64_t work_ = 0;  // Note [Pickle bombs]
  std::unordered_map<uint64_t, Item> memo_;
  std::map<std::string, Tensor> storages_;
  std::set<const TensorImpl*> storage_impls_;
  std::map<const void*, std::shared_ptr<const void>> sealed_;  // Note [No cycles]
};

void swap_bytes(uint8_t* p, uint64_t bytes, uint64_t elem) {
  for (uint64_t i = 0; i + elem <= bytes; i += elem) {
    for (uint64_t a = 0, b = elem - 1; a < b; ++a, --b) std::swap(p[i + a], p[i + b]);
  }
}

// The storages of a zip checkpoint: entry <top>data/<key>, its size checked against numel before
// anything is allocated.
class ZipStorages : public StorageSource {
 public:
  ZipStorages(const ZipReader& zip, std::string top, std::string op, bool big_endian)
      : zip_(zip), top_(std::move(top)), op_(std::move(op)), big_endian_(big_endian) {}
  Tensor load(const std::string& key, DType dtype, int64_t numel) override {
    const std::string entry = top_ + "data/" + key;
    if (!zip_.contains(entry)) throw Error(op_, "the entry " + entry + " that data.pkl names", "no such entry", kDamaged);
    const uint64_t bytes = zip_.entry_size(entry);
    const uint64_t elem = element_size(dtype);
    if (bytes % elem != 0) {
      throw Error(op_, "an entry of whole " + std::string(dtype_name(dtype)) + " elements", entry + " of " + std::to_string(bytes) + " bytes",
                  kDamaged);
    }
    if (static_cast<uint64_t>(numel) > bytes / elem) {
      throw Error(op_, "a storage of at most " + std::to_string(bytes / elem) + " elements (" + entry + " holds " + std::to_string(bytes) + " bytes)",
                  "numel " + std::to_string(numel), kDamaged);
    }
    // The entry may hold more than numel elements (PyTorch never writes that; tolerate it).
    Tensor t = graft::empty({static_cast<int64_t>(bytes / elem)}, TensorOptions(dtype));
    if (bytes > 0) zip_.read_into(entry, t.data_ptr(), bytes);
    if (big_endian_ && elem > 1) swap_bytes(static_cast<uint8_t*>(t.data_ptr()), bytes, elem);
    return t;
  }
  static constexpr const char* kDamaged = "the file is damaged or is no checkpoint torch.save wrote";

 private:
  const ZipReader& zip_;
  std::string top_;
  std::string op_;
  bool big_endian_;
};

// Note [PyTorch's legacy format]
// Before PyTorch 1.6 (and with _use_new_zipfile_serialization=False since), torch.save wrote five
// pickles one after the other, then the storages:
//   the magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, a dict of sys_info
//   (little_endian, type_sizes), the saved object (persistent ids with a sixth item, the view
//   metadata, None), the list of storage keys in the order their data follows; then per key an
//   int64 numel and numel x element-size raw bytes.
// The object is read before the data exists, so each storage is allocated when a persistent id
// first names it, its numel bounded by the bytes the file has left, and filled afterwards.
class LegacyStorages : public StorageSource {
 public:
  LegacyStorages(uint64_t budget, std::string op) : budget_(budget), op_(std::move(op)) {}
  Tensor load(const std::string& key, DType dtype, int64_t numel) override {
    const uint64_t elem = element_size(dtype);
    if (static_cast<uint64_t>(numel) > budget_ / elem) {
      throw Error(op_, "storages that fit in the file (" + std::to_string(budget_) + " bytes left)",
                  "storage " + key + " of " + std::to_string(numel) + " " + dtype_name(dtype) + " elements",
                  "the file is damaged or truncated");
    }
    budget_ -= static_cast<uint64_t>(numel) * elem;
    Tensor t = graft::empty({numel}, TensorOptions(dtype));
    pending.emplace(key, t);
    return t;
  }
  std::map<std::string, Tensor> pending;  // key -> storage, until its data is read

 private:
  uint64_t budget_;
  std::string op_;
};

constexpr uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                    0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};

bool looks_like_legacy(const char* data, size_t size) {
  return size >= sizeof kLegacyMagic && std::memcmp(data, kLegacyMagic, sizeof kLegacyMagic) == 0;
}

IValue read_legacy(const char* data, size_t size, const std::string& source, const std::string& op) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  const std::string where = source + " (PyTorch's legacy format)";
  Unpickler version(p, size, sizeof kLegacyMagic, nullptr, where, op, false);
  const IValue v = version.run();
  if (!v.isInt() || v.toInt() != 1001) {
    throw Error(op, "protocol version 1001 after the legacy format's magic number", "another value", "the file is damaged");
  }
  Unpickler sys_info(p, size, version.end(), nullptr, where, op, false);
  const IValue info = sys_info.run();
  if (!info.isGenericDict() || !info.toGenericDict().contains("little_endian") ||
      !info.toGenericDict().at("little_endian").isBool()) {
    throw Error(op, "the legacy format's sys_info dict with little_endian", "a " + info.tagKind(), "the file is damaged");
  }
  if (!info.toGenericDict().at("little_endian").toBool()) {
    throw Error(op, "a file from a little-endian machine", "a big-endian one",
                "load it in Python and save it again with torch.save's default (zip) format");
  }
  LegacyStorages storages(size - sys_info.end(), op);
  Unpickler object(p, size, sys_info.end(), &storages, where, op, false);
  IValue root = object.run();
  Unpickler keys_pickle(p, size, object.end(), nullptr, where, op, false);
  const IValue keys = keys_pickle.run();
  if (!keys.isList()) throw Error(op, "the list of storage keys", "a " + keys.tagKind(), "the file is damaged");
  uint64_t pos = keys_pickle.end();
  for (const IValue& k : keys.toListRef()) {
    if (!k.isString()) throw Error(op, "storage keys that are strings", "a " + k.tagKind(), "the file is damaged");
    auto it = storages.pending.find(k.toStringRef());
    if (it == storages.pending.end()) {
      throw Error(op, "data for storages the object names", "data for storage " + k.toStringRef() + ", named by none or twice",
                  "the file is damaged");
    }
    Tensor t = it->second;
    storages.pending.erase(it);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    if (size - pos < 8 || size - pos - 8 < bytes) {
      throw Error(op, std::to_string(8 + bytes) + " bytes for storage " + k.toStringRef() + " at byte " + std::to_string(pos),
                  std::to_string(size - pos) + " bytes left", "the file is truncated");
    }
    int64_t numel = 0;
    std::memcpy(&numel, p + pos, 8);
    if (numel != t.numel()) {
      throw Error(op, "storage " + k.toStringRef() + " of " + std::to_string(t.numel()) + " elements, as the object says",
                  std::to_string(numel) + " in its data", "the file is damaged");
    }
    if (bytes > 0) std::memcpy(t.data_ptr(), p + pos + 8, bytes);
    pos += 8 + bytes;
  }
  if (!storages.pending.empty()) {
    throw Error(op, "data for every storage the object names", "none for storage " + storages.pending.begin()->first,
                "the file is truncated or damaged");
  }
  return root;
}

// The top folder of a zip checkpoint: the part of the first entry's name before its first '/'
// (PyTorch's reader does the same), with the '/'.
std::string top_folder(const ZipReader& zip, const std::string& op, const std::string& source) {
  if (zip.names().empty()) throw Error(op, "a checkpoint with a data.pkl entry", "an empty zip archive", "is " + source + " a checkpoint?");
  const std::string& first = zip.names().front();
  const auto slash = first.find('/');
  if (slash == std::string::npos) {
    throw Error(op, "entries under one top folder (archive/data.pkl)", "the entry '" + first + "'",
                "is " + source + " a checkpoint torch.save wrote?");
  }
  return first.substr(0, slash + 1);
}

}  // namespace

IValue read_torch_file(const char* data, size_t size, const std::string& source, const std::string& op_name) {
  if (looks_like_legacy(data, size)) return read_legacy(data, size, source, file_op(op_name.c_str(), source));
  return read_torch_zip(data, size, source, op_name, false);
}

IValue read_torch_zip(const char* data, size_t size, const std::string& source, const std::string& op_name,
                      bool script_objects) {
  const std::string op = file_op(op_name.c_str(), source);
  if (!looks_like_zip(data, size)) {
    throw Error(op, script_objects ? "a zip archive, as torch::save writes" : "a zip archive or PyTorch's legacy format, as torch.save writes",
                "a file starting with neither", "is " + source + " a checkpoint?");
  }
  ZipReader zip(data, size, source, op_name);
  const std::string top = top_folder(zip, op, source);
  const std::string pkl = top + "data.pkl";
  if (!zip.contains(pkl)) {
    throw Error(op, "the entry " + pkl, "an archive without it", "is " + source + " a checkpoint torch.save wrote?");
  }
  std::string byteorder = "little";
  if (zip.contains(top + "byteorder")) {
    byteorder = zip.read(top + "byteorder");
    if (byteorder != "little" && byteorder != "big") {
      throw Error(op, "byteorder 'little' or 'big'", "'" + byteorder.substr(0, 16) + "'", "the file is damaged");
    }
  }
  const std::string pickle = zip.read(pkl);
  ZipStorages storages(zip, top, op, byteorder == "big");
  Unpickler u(reinterpret_cast<const uint8_t*>(pickle.data()), pickle.size(), 0, &storages, pkl, op, script_objects);
  return u.run();
}

}  // namespace io::detail

IValue pickle_load(const std::vector<char>& data) {
  return io::detail::read_torch_file(data.data(), data.size(), "<memory>", "pickle_load");
}

IValue pickle_load(const std::string& path) {
  io::detail::InputFile file(path, io::detail::file_op("pickle_load", path));
  const auto bytes = file.read_all();
  return io::detail::read_torch_file(reinterpret_cast<const char*>(bytes.data()), bytes.size(), path, "pickle_load");
}

}  // namespace graft
