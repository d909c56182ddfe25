// graft::save / graft::load and the archives (Note [Archive format] in graft/io/serialize.h).
#include "graft/io/serialize.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <istream>
#include <iterator>
#include <ostream>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "graft/autograd/grad_mode.h"
#include "graft/core/shape.h"
#include "graft/io/file.h"
#include "graft/io/pickle.h"
#include "io/file_util.h"
#include "io/libtorch_archive.h"
#include "io/pickle_internal.h"
#include "io/state_dict_check.h"

namespace graft::serialize {

namespace {

constexpr const char* kFormatKey = "graft.format";
constexpr const char* kFormat = "archive/1";
constexpr const char* kKindKey = "graft.kind";
constexpr const char* kValuesKey = "graft.values";
constexpr const char* kKinds[] = {"module", "optimizer", "tensor", "tensors", "archive"};

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

std::string quoted_list(const std::vector<std::string>& keys, size_t limit = 20) {
  if (keys.empty()) return "(none)";
  std::string s;
  for (size_t i = 0; i < keys.size() && i < limit; ++i) s += (i ? ", " : "") + in_quotes(keys[i]);
  if (keys.size() > limit) s += ", ... (" + std::to_string(keys.size()) + " in all)";
  return s;
}

// LibTorch's torch::save writes zip archives (Note [LibTorch archives]); graft's are safetensors.
bool looks_like_zip(const uint8_t* p, size_t n) { return n >= 4 && std::memcmp(p, "PK\x03\x04", 4) == 0; }

void check_cpu(const std::optional<Device>& device, const std::string& source) {
  GRAFT_CHECK(!device || device->is_cpu(), "InputArchive::load_from(" + in_quotes(source) + ")",
              "device CPU (or none)", "device " + device->str(), "graft tensors live on the CPU");
}

std::string op_load(const std::string& what, const std::string& source) {
  return "graft::load(" + what + ", " + in_quotes(source) + ")";
}

// Values in the metadata (Note [Archive format]: "graft.values").
nlohmann::json encode_value(const IValue& v, const std::string& op, int depth) {
  GRAFT_CHECK(depth <= kMaxPickleDepth, op, "values nested at most " + std::to_string(kMaxPickleDepth) + " deep",
              "deeper nesting", "a container that holds itself nests without end");
  using J = nlohmann::json;
  auto seq = [&](const std::vector<IValue>& items) {
    J out = J::array();
    for (const auto& e : items) out.push_back(encode_value(e, op, depth + 1));
    return out;
  };
  auto number = [](double d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return std::string(buf);
  };
  if (v.isNone()) return J::array({"n"});
  if (v.isBool()) return J::array({"b", v.toBool()});
  if (v.isInt()) return J::array({"i", v.toInt()});
  if (v.isDouble()) return J::array({"d", number(v.toDouble())});
  if (v.isString()) return J::array({"s", v.toStringRef()});
  if (v.isIntList()) return J::array({"il", v.toIntVector()});
  if (v.isDoubleList()) {
    J out = J::array();
    for (double d : v.toDoubleVector()) out.push_back(number(d));
    return J::array({"dl", out});
  }
  if (v.isTuple()) return J::array({"t", seq(v.toTupleRef().elements())});
  if (v.isList() && !v.isTensorList()) return J::array({"l", seq(v.toListRef())});
  if (v.isGenericDict()) {
    J out = J::array();
    for (const auto& e : v.toGenericDict()) {
      out.push_back(J::array({encode_value(e.key(), op, depth + 1), encode_value(e.value(), op, depth + 1)}));
    }
    return J::array({"D", out});
  }
  throw Error(op, "a value of numbers, strings, None, lists, tuples and dicts", "one holding a " + v.tagKind(),
              "write tensors with write(key, tensor)");
}

IValue decode_value(const nlohmann::json& j, const std::string& op, int depth) {
  auto bad = [&](const std::string& what) -> void {
    throw Error(op, "a value as graft::save writes it (Note [Archive format], \"graft.values\")", what,
                "the file was edited or damaged");
  };
  if (depth > kMaxPickleDepth) bad("values nested deeper than " + std::to_string(kMaxPickleDepth));
  if (!j.is_array() || j.empty() || !j[0].is_string()) bad("an entry that is no [tag, payload]");
  const std::string tag = j[0].get<std::string>();
  if (tag == "n") return IValue();
  if (j.size() != 2) bad("tag \"" + tag + "\" without one payload");
  const auto& p = j[1];
  auto to_double = [&](const nlohmann::json& x) {
    if (!x.is_string()) bad("a double that is no string");
    const std::string& s = x.get_ref<const std::string&>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) bad("the double \"" + s.substr(0, 40) + "\"");
    return d;
  };
  auto items = [&]() {
    if (!p.is_array()) bad("tag \"" + tag + "\" without an array");
    std::vector<IValue> out;
    for (const auto& e : p) out.push_back(decode_value(e, op, depth + 1));
    return out;
  };
  if (tag == "b" && p.is_boolean()) return IValue(p.get<bool>());
  if (tag == "i" && p.is_number_integer()) return IValue(p.get<int64_t>());
  if (tag == "d") return IValue(to_double(p));
  if (tag == "s" && p.is_string()) return IValue(p.get<std::string>());
  if (tag == "t") return IValue(ivalue::Tuple::create(items()));
  if (tag == "l") {
    impl::GenericList l(AnyType::get());
    for (auto& e : items()) l.push_back(std::move(e));
    return IValue(l);
  }
  if (tag == "il" && p.is_array()) {
    std::vector<int64_t> v;
    for (const auto& e : p) {
      if (!e.is_number_integer()) bad("an int list holding another kind");
      v.push_back(e.get<int64_t>());
    }
    return IValue(v);
  }
  if (tag == "dl" && p.is_array()) {
    std::vector<double> v;
    for (const auto& e : p) v.push_back(to_double(e));
    return IValue(v);
  }
  if (tag == "D" && p.is_array()) {
    impl::GenericDict d(AnyType::get(), AnyType::get());
    for (const auto& e : p) {
      if (!e.is_array() || e.size() != 2) bad("a dict entry that is no [key, value]");
      IValue k = decode_value(e[0], op, depth + 1);
      if (!(k.isString() || k.isInt() || k.isDouble() || k.isBool())) bad("a dict key holding " + k.tagKind());
      d.insert_or_assign(std::move(k), decode_value(e[1], op, depth + 1));
    }
    return IValue(d);
  }
  bad("tag \"" + tag + "\" with a payload of the wrong kind");
  return IValue();
}

}  // namespace

// ---- OutputArchive ----

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool is_buffer) {
  GRAFT_CHECK(!key.empty(), "OutputArchive::write", "a non-empty key", "an empty key",
              "name every tensor, as a state dict does");
  GRAFT_CHECK(tensor.defined(), "OutputArchive::write(" + in_quotes(key) + ")", "a defined tensor",
              "an undefined tensor", "skip undefined tensors (Linear without bias has none to save)");
  GRAFT_CHECK(!tensors_.contains(key), "OutputArchive::write(" + in_quotes(key) + ")", "a key not yet written",
              "a second tensor under " + in_quotes(key), "each key holds one tensor");
  tensors_.insert(key, tensor.detach());
  if (is_buffer) buffers_.insert(key);
}

void OutputArchive::write(const std::string& key, OutputArchive& nested_archive) {
  GRAFT_CHECK(!key.empty(), "OutputArchive::write", "a non-empty key for the nested archive", "an empty key",
              "name the nested archive");
  GRAFT_CHECK(&nested_archive != this, "OutputArchive::write(" + in_quotes(key) + ")", "another archive",
              "the archive itself", "write a nested archive into its parent");
  for (const auto& item : nested_archive.tensors_) {
    write(key + "." + item.key(), item.value(), nested_archive.buffers_.count(item.key()) != 0);
  }
  for (const auto& [k, v] : nested_archive.values_) write(key + "." + k, v);
}

void OutputArchive::write(const std::string& key, const IValue& ivalue) {
  GRAFT_CHECK(!key.empty(), "OutputArchive::write", "a non-empty key", "an empty key", "name every value");
  GRAFT_CHECK(!tensors_.contains(key) && !values_.count(key), "OutputArchive::write(" + in_quotes(key) + ")",
              "a key not yet written", "a second entry under " + in_quotes(key), "each key holds one value");
  (void)encode_value(ivalue, "OutputArchive::write(" + in_quotes(key) + ")", 0);  // refuses what the file cannot hold
  values_.emplace(key, ivalue);
}

void OutputArchive::set_kind(const std::string& kind) {
  kind_ = (tensors_.is_empty() && kind_.empty()) ? kind : std::string("archive");
}

io::Metadata OutputArchive::metadata() const {
  io::Metadata m{{kFormatKey, kFormat}, {kKindKey, kind_.empty() ? std::string("archive") : kind_}};
  if (!values_.empty()) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [k, v] : values_) values[k] = encode_value(v, "OutputArchive::save_to", 0);
    m.emplace(kValuesKey, values.dump());
  }
  return m;
}

void OutputArchive::save_to(const std::string& filename) const {
  io::save_safetensors(filename, tensors_, metadata());
}

void OutputArchive::save_to(const std::string& filename, ArchiveFormat format) const {
  if (format == ArchiveFormat::Graft) return save_to(filename);
  // The dotted keys as LibTorch's nested modules: "head.0.weight" is attribute "weight" of
  // submodule "0" of submodule "head", in the order the keys were written.
  const std::string op = "OutputArchive::save_to(" + in_quotes(filename) + ", ArchiveFormat::LibTorch)";
  io::detail::ScriptObject root;
  auto place = [&](const std::string& key, IValue value, bool is_buffer) {
    io::detail::ScriptObject* o = &root;
    size_t start = 0;
    for (size_t dot = key.find('.'); dot != std::string::npos; start = dot + 1, dot = key.find('.', start)) {
      const std::string part = key.substr(start, dot - start);
      auto it = std::find_if(o->attributes.begin(), o->attributes.end(), [&](const auto& a) { return a.name == part; });
      if (it == o->attributes.end()) {
        o->attributes.push_back({part, IValue(), std::make_shared<io::detail::ScriptObject>(), false});
        it = std::prev(o->attributes.end());
      }
      GRAFT_CHECK(it->object != nullptr, op, "keys that nest as modules", "\"" + key + "\" below the value \"" + part + "\"",
                  "rename one of them");
      o = it->object.get();
    }
    const std::string name = key.substr(start);
    GRAFT_CHECK(!name.empty() && std::none_of(o->attributes.begin(), o->attributes.end(), [&](const auto& a) { return a.name == name; }),
                op, "one entry per name", "\"" + key + "\" twice or empty", "rename one of them");
    if (value.isTensor() && !is_buffer && value.toTensor().is_floating_point()) {
      value = IValue(value.toTensor().detach().requires_grad_(true));  // a parameter, as LibTorch saves it
    }
    o->attributes.push_back({name, std::move(value), nullptr, is_buffer});
  };
  for (const auto& item : tensors_) place(item.key(), IValue(item.value()), buffers_.count(item.key()) != 0);
  for (const auto& [k, v] : values_) place(k, v, false);
  io::write_file_atomically(filename, io::detail::write_script_archive(root, op), op);
}

void OutputArchive::save_to(std::ostream& stream) const {
  const std::vector<uint8_t> bytes = io::serialize_safetensors(tensors_, metadata());
  stream.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  GRAFT_CHECK(stream.good(), "OutputArchive::save_to(stream)", "a stream that accepts the archive",
              "a stream error after writing " + std::to_string(bytes.size()) + " bytes",
              "check the stream (a full disk, a closed file)");
}

void OutputArchive::save_to(const std::function<size_t(const void*, size_t)>& func) const {
  const std::vector<uint8_t> bytes = io::serialize_safetensors(tensors_, metadata());
  const size_t written = func(bytes.data(), bytes.size());
  GRAFT_CHECK(written == bytes.size(), "OutputArchive::save_to(function)",
              "the function to take all " + std::to_string(bytes.size()) + " bytes",
              std::to_string(written) + " bytes taken", "the writer function returns the number of bytes it wrote");
}

// ---- InputArchive ----

void InputArchive::set_contents(io::SafetensorsContents contents, std::string source) {
  const std::string op = "InputArchive::load_from(" + in_quotes(source) + ")";
  auto format = contents.metadata.find(kFormatKey);
  GRAFT_CHECK(format != contents.metadata.end() && format->second == kFormat, op,
              std::string("a graft archive (safetensors metadata \"") + kFormatKey + "\": \"" + kFormat + "\")",
              format == contents.metadata.end() ? std::string("a safetensors file without \"graft.format\"")
                                                : "\"graft.format\": " + in_quotes(format->second),
              "graft::load reads files written by graft::save or OutputArchive::save_to; read other "
              "safetensors files with graft::io::load_safetensors");
  auto kind = contents.metadata.find(kKindKey);
  const bool known = kind != contents.metadata.end() &&
                     std::find(std::begin(kKinds), std::end(kKinds), kind->second) != std::end(kKinds);
  GRAFT_CHECK(known, op, "\"graft.kind\" one of module, optimizer, tensor, tensors, archive",
              kind == contents.metadata.end() ? std::string("no \"graft.kind\"") : in_quotes(kind->second),
              "the file was written by another version of graft, or edited");
  auto c = std::make_shared<Contents>();
  auto values = contents.metadata.find(kValuesKey);
  if (values != contents.metadata.end()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(values->second);
    } catch (const nlohmann::json::exception& e) {
      throw Error(op, "\"graft.values\" holding JSON", std::string("a parse error: ") + e.what(), "the file was edited or damaged");
    }
    if (!j.is_object()) throw Error(op, "\"graft.values\" holding a JSON object", "another JSON value", "the file was edited or damaged");
    for (const auto& [k, v] : j.items()) c->values.emplace(k, decode_value(v, op + ", value " + in_quotes(k), 0));
  }
  c->tensors = std::move(contents.tensors);
  c->kind = kind->second;
  c->source = std::move(source);
  contents_ = std::move(c);
  prefix_.clear();
}

void InputArchive::set_libtorch_contents(const char* data, size_t size, std::string source) {
  io::detail::LibTorchArchive a =
      io::detail::read_libtorch_archive(data, size, source, "InputArchive::load_from");
  auto c = std::make_shared<Contents>();
  c->tensors = std::move(a.tensors);
  c->values = std::move(a.values);
  c->kind = std::move(a.kind);
  c->source = std::move(source);
  c->libtorch = true;
  contents_ = std::move(c);
  prefix_.clear();
}

void InputArchive::load_from(const std::string& filename, std::optional<Device> device) {
  check_cpu(device, filename);
  uint8_t magic[4] = {};
  {
    std::ifstream in(filename, std::ios::binary);
    in.read(reinterpret_cast<char*>(magic), 4);
  }
  if (looks_like_zip(magic, 4)) {  // LibTorch's archive (Note [LibTorch archives])
    io::detail::InputFile file(filename, "InputArchive::load_from(" + in_quotes(filename) + ")");
    const std::vector<uint8_t> bytes = file.read_all();
    set_libtorch_contents(reinterpret_cast<const char*>(bytes.data()), bytes.size(), filename);
    return;
  }
  set_contents(io::load_safetensors(filename), filename);
}

void InputArchive::load_from(const char* data, size_t size, std::optional<Device> device) {
  check_cpu(device, "<memory>");
  GRAFT_CHECK(data != nullptr || size == 0, "InputArchive::load_from(data, size)", "a buffer",
              "a null pointer with size " + std::to_string(size), "pass the archive's bytes");
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  if (looks_like_zip(bytes, size)) return set_libtorch_contents(data, size, "<memory>");
  set_contents(io::parse_safetensors(std::span<const uint8_t>(bytes, size), "<memory>"), "<memory>");
}

void InputArchive::load_from(std::istream& stream, std::optional<Device> device) {
  check_cpu(device, "<stream>");
  std::vector<char> bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  GRAFT_CHECK(!stream.bad(), "InputArchive::load_from(<stream>)", "a readable stream", "a stream error",
              "check the stream");
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (looks_like_zip(p, bytes.size())) return set_libtorch_contents(bytes.data(), bytes.size(), "<stream>");
  set_contents(io::parse_safetensors(std::span<const uint8_t>(p, bytes.size()), "<stream>"), "<stream>");
}

void InputArchive::load_from(const std::function<size_t(uint64_t pos, void* buf, size_t nbytes)>& read_func,
                             const std::function<size_t(void)>& size_func, std::optional<Device> device) {
  check_cpu(device, "<function>");
  const size_t size = size_func();
  std::vector<uint8_t> bytes(size);
  // Chunks of at most 1 MiB, as a reader over a socket or a compressed stream may deliver less.
  size_t pos = 0;
  while (pos < size) {
    const size_t want = std::min<size_t>(size - pos, size_t{1} << 20);
    const size_t got = read_func(pos, bytes.data() + pos, want);
    GRAFT_CHECK(got > 0 && got <= want, "InputArchive::load_from(<function>)",
                "the read function to deliver bytes " + std::to_string(pos) + ".." + std::to_string(pos + want),
                std::to_string(got) + " bytes", "size_func() must return the size read_func can deliver");
    pos += got;
  }
  if (looks_like_zip(bytes.data(), bytes.size())) {
    return set_libtorch_contents(reinterpret_cast<const char*>(bytes.data()), bytes.size(), "<function>");
  }
  set_contents(io::parse_safetensors(bytes, "<function>"), "<function>");
}

const InputArchive::Contents& InputArchive::contents(const char* op) const {
  GRAFT_CHECK(contents_ != nullptr, op, "an archive that was loaded", "an empty InputArchive",
              "call load_from(path) first (or read(key, archive) from a loaded one)");
  return *contents_;
}

const std::string& InputArchive::kind() const { return contents("InputArchive::kind").kind; }
const std::string& InputArchive::source() const { return contents("InputArchive::source").source; }
std::string InputArchive::full_key(const std::string& key) const { return prefix_ + key; }

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool /*is_buffer*/) {
  const Tensor* found = contents("InputArchive::read").tensors.find(prefix_ + key);
  if (!found) return false;
  if (tensor.defined() && tensor.dtype() == found->dtype() && tensor.sizes().equals(found->sizes())) {
    NoGradGuard no_grad;
    tensor.copy_(*found);
  } else {
    const bool requires_grad = tensor.defined() && tensor.requires_grad() && found->is_floating_point();
    // A fresh copy: two reads of one key must not share storage.
    tensor = found->clone();
    if (requires_grad) tensor.set_requires_grad(true);
  }
  return true;
}

void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  if (try_read(key, tensor, is_buffer)) return;
  throw Error("InputArchive::read(" + in_quotes(key) + ")",
              "a tensor " + in_quotes(prefix_ + key) + " in " + in_quotes(source()),
              "no such key (keys here: " + quoted_list(keys()) + ")", "read the keys the archive was written with");
}

bool InputArchive::try_read(const std::string& key, InputArchive& archive) {
  const Contents& c = contents("InputArchive::read");
  const std::string prefix = prefix_ + key + ".";
  const auto it = c.values.lower_bound(prefix);
  const bool any = std::any_of(c.tensors.begin(), c.tensors.end(),
                               [&](const auto& item) { return item.key().compare(0, prefix.size(), prefix) == 0; }) ||
                   (it != c.values.end() && it->first.compare(0, prefix.size(), prefix) == 0);
  if (!any) return false;
  archive.contents_ = contents_;
  archive.prefix_ = prefix;
  return true;
}

bool InputArchive::try_read(const std::string& key, IValue& ivalue) {
  const Contents& c = contents("InputArchive::read");
  auto it = c.values.find(prefix_ + key);
  if (it == c.values.end()) return false;
  ivalue = it->second;
  return true;
}

void InputArchive::read(const std::string& key, IValue& ivalue) {
  if (try_read(key, ivalue)) return;
  throw Error("InputArchive::read(" + in_quotes(key) + ")", "a value " + in_quotes(prefix_ + key) + " in " + in_quotes(source()),
              "no such value: the archive does not have a field with name " + in_quotes(prefix_ + key) +
                  " (keys here: " + quoted_list(keys()) + ")",
              "read the keys the archive was written with");
}

std::map<std::string, IValue> InputArchive::values() const {
  std::map<std::string, IValue> out;
  for (const auto& [k, v] : contents("InputArchive::values").values) {
    if (k.compare(0, prefix_.size(), prefix_) == 0) out.emplace(k.substr(prefix_.size()), v);
  }
  return out;
}

bool InputArchive::from_libtorch() const { return contents("InputArchive::from_libtorch").libtorch; }

void InputArchive::read(const std::string& key, InputArchive& archive) {
  if (try_read(key, archive)) return;
  throw Error("InputArchive::read(" + in_quotes(key) + ")",
              "a nested archive " + in_quotes(prefix_ + key) + " in " + in_quotes(source()),
              "no such key (keys here: " + quoted_list(keys()) + ")", "read the keys the archive was written with");
}

std::vector<std::string> InputArchive::keys() const {
  std::set<std::string> names;
  const Contents& c = contents("InputArchive::keys");
  auto add = [&](const std::string& k) {
    if (k.compare(0, prefix_.size(), prefix_) != 0) return;
    const std::string rel = k.substr(prefix_.size());
    names.insert(rel.substr(0, rel.find('.')));
  };
  for (const auto& item : c.tensors) add(item.key());
  for (const auto& item : c.values) add(item.first);
  return {names.begin(), names.end()};
}

io::TensorDict InputArchive::tensors() const {
  io::TensorDict out;
  for (const auto& item : contents("InputArchive::tensors").tensors) {
    const std::string& k = item.key();
    if (k.compare(0, prefix_.size(), prefix_) == 0) out.insert(k.substr(prefix_.size()), item.value());
  }
  return out;
}

}  // namespace graft::serialize

namespace graft {

// What a value of `kind` may be read from: its own kind, or an archive a program wrote by hand.
static void check_kind(const serialize::InputArchive& archive, const std::string& op,
                       std::initializer_list<const char*> kinds) {
  const std::string& kind = archive.kind();
  if (kind == "archive") return;
  for (const char* k : kinds)
    if (kind == k) return;
  std::string expected;
  for (const char* k : kinds) expected += (expected.empty() ? "" : " or ") + std::string(k);
  throw Error(op, "a file holding a " + expected + " (\"graft.kind\")", "a file holding a " + kind,
              "load each file into the kind of value it was saved from");
}

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Tensor& tensor) {
  archive.set_kind("tensor");
  archive.write("0", tensor);
  return archive;
}

serialize::InputArchive& operator>>(serialize::InputArchive& archive, Tensor& tensor) {
  check_kind(archive, serialize::op_load("tensor", archive.source()), {"tensor", "tensors"});
  archive.read("0", tensor);
  return archive;
}

}  // namespace graft

namespace graft::nn {

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Module& module) {
  archive.set_kind("module");
  std::set<std::string> buffers;
  for (const auto& item : module.named_buffers()) buffers.insert(item.key());
  for (const auto& item : module.state_dict()) archive.write(item.key(), item.value(), buffers.count(item.key()) != 0);
  return archive;
}

// PyTorch's strict load_state_dict, with dtypes checked too and the file named; every problem is
// reported at once and nothing is copied unless all checks pass.
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Module& module) {
  const std::string op = serialize::op_load(module.name(), archive.source());
  check_kind(archive, op, {"module"});
  const io::TensorDict file = archive.tensors();
  // The comparison graft::load_state_dict makes too (src/io/state_dict_check.h), worded here.
  const io::detail::StateDictFit fit = io::detail::fit_state_dict(module.state_dict(), file);
  std::vector<std::string> missing, unexpected, mismatches;
  for (const std::string& k : fit.missing) missing.push_back(archive.full_key(k));
  for (const std::string& k : fit.unexpected) unexpected.push_back(archive.full_key(k));
  for (const auto& m : fit.mismatches) {
    mismatches.push_back(m.shape ? "shape mismatch for \"" + archive.full_key(m.key) + "\": the file has " +
                                       shape_str(m.file.sizes()) + ", the module has " + shape_str(m.module.sizes())
                                 : "dtype mismatch for \"" + archive.full_key(m.key) + "\": the file has " +
                                       dtype_name(m.file.dtype()) + ", the module has " + dtype_name(m.module.dtype()));
  }
  // LibTorch's phrase for the first missing key, which its tests look for: LibTorch reads the module
  // tree top down, so it names the first submodule the file has nothing under ("No such serialized
  // submodule: 'a.x'"), or else the tensor ("No such serialized tensor 'a.b.x'").
  const auto libtorch_missing = [&] {
    const std::string& key = fit.missing.front();
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
      const std::string under = key.substr(0, dot + 1);
      bool found = false;
      for (const auto& item : file) found = found || item.key().compare(0, under.size(), under) == 0;
      if (!found) return "No such serialized submodule: '" + archive.full_key(key.substr(0, dot)) + "'";
    }
    return "No such serialized tensor '" + archive.full_key(key) + "'";
  };
  if (!missing.empty() || !unexpected.empty() || !mismatches.empty()) {
    std::string msg = "the parameters and buffers of " + module.name() + " in \"" + archive.source() +
                      "\", with the module's names, shapes and dtypes and nothing else; got:";
    if (!missing.empty())
      msg += "\n\tmissing key(s): " + serialize::quoted_list(missing) + " (" + libtorch_missing() + ")";
    if (!unexpected.empty()) msg += "\n\tunexpected key(s): " + serialize::quoted_list(unexpected);
    for (const auto& m : mismatches) msg += "\n\t" + m;
    msg += "\n(nothing was loaded. Hint: load into the architecture that was saved; to load a part, call "
           "load_state_dict(archive.tensors(), /*strict=*/false))";
    throw Error(op, msg);
  }
  module.load_state_dict(file, /*strict=*/true);
  return archive;
}

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const std::shared_ptr<Module>& module) {
  GRAFT_CHECK(module != nullptr, "graft::save", "a module", "a null module pointer", "construct the module first");
  return archive << *module;
}

serialize::InputArchive& operator>>(serialize::InputArchive& archive, const std::shared_ptr<Module>& module) {
  GRAFT_CHECK(module != nullptr, "graft::load", "a module", "a null module pointer",
              "construct the module (same architecture) first, then load into it");
  return archive >> *module;
}

}  // namespace graft::nn

namespace graft::optim {

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Optimizer& optimizer) {
  archive.set_kind("optimizer");
  for (const auto& item : optimizer.state_dict()) archive.write(item.key(), item.value());
  return archive;
}

serialize::InputArchive& operator>>(serialize::InputArchive& archive, Optimizer& optimizer) {
  const std::string op = serialize::op_load(optimizer.name(), archive.source());
  check_kind(archive, op, {"optimizer"});
  try {
    if (archive.from_libtorch()) {
      // LibTorch's layout, in graft's terms; options LibTorch 1.13 lacks (maximize) keep their values.
      io::TensorDict state = io::detail::libtorch_optimizer_state(archive.tensors(), archive.values(), "", op);
      for (const auto& item : optimizer.state_dict()) {
        if (item.key().rfind("param_groups.", 0) == 0 && !state.contains(item.key())) state.insert(item.key(), item.value());
      }
      optimizer.load_state_dict(state);
      return archive;
    }
    optimizer.load_state_dict(archive.tensors());
  } catch (const Error& e) {
    throw Error(op, std::string(e.what()));
  }
  return archive;
}

}  // namespace graft::optim
