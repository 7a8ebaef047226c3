// HDF5 RAII wrappers: files, groups, datasets and attributes over the HDF5 C API (see hdf5.h).
#include "tower/io/hdf5.h"

#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <type_traits>

namespace tower::io::hdf5 {
namespace {

static_assert(std::is_same_v<hid_t, Handle::Id>, "Handle::Id must be hid_t");

// HDF5 prints its error stack to stderr on every failure unless told not to; the setting is per
// thread in thread-safe builds, so every entry point makes sure it is off on the calling thread.
void silence_errors() {
  thread_local bool silenced = false;
  if (!silenced) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    silenced = true;
  }
}

// The innermost message of HDF5's error stack (the most specific reason), then clears the stack.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        if (n == 0 && e->desc) *static_cast<std::string*>(data) = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason.empty() ? "HDF5 error" : reason;
}

[[noreturn]] void fail(const std::string& what) { throw FileError(what + ": " + hdf5_reason()); }

// Throws FileError(what: HDF5's reason) when an HDF5 call returned a negative value.
template <typename T>
T check(T result, const std::string& what) {
  if (result < 0) fail(what);
  return result;
}

Handle owned(hid_t id, const std::string& what) { return Handle(check(id, what)); }

// ---- element types ------------------------------------------------------------------------------

hid_t memory_type(DType dtype, const std::string& where) {
  switch (dtype) {
    case DType::float32: return H5T_NATIVE_FLOAT;
    case DType::float64: return H5T_NATIVE_DOUBLE;
    case DType::int32: return H5T_NATIVE_INT32;
    case DType::int64: return H5T_NATIVE_INT64;
    case DType::uint8: return H5T_NATIVE_UINT8;
    default:
      raise<DTypeError>("{}: HDF5 datasets of dtype {} are not supported (use float32, float64, int32, int64 or uint8)",
                        where, dtype_name(dtype));
  }
}

// Little-endian on disk, as h5py writes on every common machine.
hid_t file_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return H5T_IEEE_F32LE;
    case DType::float64: return H5T_IEEE_F64LE;
    case DType::int32: return H5T_STD_I32LE;
    case DType::int64: return H5T_STD_I64LE;
    default: return H5T_STD_U8LE;  // memory_type() rejected the others first
  }
}

// ---- checksums ----------------------------------------------------------------------------------

// zlib's CRC32 of a cpu tensor's values as the file stores them: little-endian, row-major.
std::uint32_t crc32_of(const Tensor& host) {
  const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
  std::vector<unsigned char> little_endian;
  if constexpr (std::endian::native == std::endian::big) {
    const std::size_t size = dtype_size(host.dtype());
    little_endian.assign(bytes, bytes + host.nbytes());
    for (std::size_t i = 0; i < little_endian.size(); i += size)
      std::reverse(little_endian.begin() + static_cast<std::ptrdiff_t>(i),
                   little_endian.begin() + static_cast<std::ptrdiff_t>(i + size));
    bytes = little_endian.data();
  }
  return static_cast<std::uint32_t>(crc32_z(crc32_z(0, nullptr, 0), bytes, host.nbytes()));
}

// Chunks of at most this size: HDF5 checks (fletcher32) and reads a chunk as a whole.
constexpr std::size_t kMaxChunkBytes = std::size_t{64} << 20;

// The creation properties of a dataset of `dims`: chunked (one chunk, or halves of the leading
// dimensions until a chunk fits kMaxChunkBytes) with HDF5's fletcher32 filter, which h5py and every
// other HDF5 reader check on their own. Scalars and empty datasets cannot be chunked: they stay
// contiguous, covered by the checksum attribute alone.
Handle dataset_create_plist(std::vector<hsize_t> dims, std::size_t element_size, const std::string& where) {
  Handle plist = owned(H5Pcreate(H5P_DATASET_CREATE), where);
  std::size_t bytes = element_size;
  for (hsize_t d : dims) bytes *= d;
  if (dims.empty() || bytes == 0) return plist;
  for (std::size_t i = 0; bytes > kMaxChunkBytes && i < dims.size();) {
    if (dims[i] == 1) {
      ++i;
      continue;
    }
    bytes = bytes / dims[i] * ((dims[i] + 1) / 2);
    dims[i] = (dims[i] + 1) / 2;
  }
  check(H5Pset_chunk(plist.get(), static_cast<int>(dims.size()), dims.data()), where + ": cannot set the chunk size");
  check(H5Pset_fletcher32(plist.get()), where + ": cannot add the fletcher32 filter");
  return plist;
}

// A variable-length C string type, the memory and file type of strings tower writes.
Handle vlen_string_type(H5T_cset_t cset) {
  Handle type = owned(H5Tcopy(H5T_C_S1), "H5Tcopy");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type.get(), cset), "H5Tset_cset");
  return type;
}

H5T_cset_t cset_of(const std::vector<std::string>& values) {
  for (const auto& s : values)
    if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
      return H5T_CSET_UTF8;
  return H5T_CSET_ASCII;
}

// ---- attributes ---------------------------------------------------------------------------------

// The size in bytes of the file that holds `object`.
hsize_t file_size_of(hid_t object, const std::string& where) {
  Handle file = owned(H5Iget_file_id(object), where + ": cannot find the attribute's file");
  hsize_t bytes = 0;
  check(H5Fget_filesize(file.get(), &bytes), where + ": cannot read the file's size");
  return bytes;
}

// Every string of a string attribute (scalar or array, fixed- or variable-length). An empty array of
// another type (Keras's weight_names of a weightless layer) is an empty list.
std::vector<std::string> read_strings(hid_t attr, const std::string& where) {
  Handle type = owned(H5Aget_type(attr), where + ": cannot read the attribute's type");
  Handle space = owned(H5Aget_space(attr), where + ": cannot read the attribute's shape");
  const auto n = static_cast<std::size_t>(check(H5Sget_simple_extent_npoints(space.get()), where));
  if (H5Tget_class(type.get()) != H5T_STRING) {
    if (n == 0) return {};
    throw FileError(where + ": the attribute holds numbers, not strings");
  }
  std::vector<std::string> out;
  if (n == 0) return out;
  // A count from a damaged file can be anything: each string takes at least one byte of the file (a
  // variable-length one 16: its global heap reference), so a count beyond the file's size is damage,
  // refused before a buffer is made for it (found by fuzz_hdf5_weights: a std::length_error escaped).
  const bool variable_length = check(H5Tis_variable_str(type.get()), where) > 0;
  const std::size_t element_bytes = variable_length ? 16 : H5Tget_size(type.get());
  if (element_bytes == 0 || n > file_size_of(attr, where) / element_bytes)
    throw FileError(fmt::format("{}: the attribute claims {} strings of {} bytes, more than the whole file holds (the "
                                "file is damaged)", where, n, element_bytes));
  if (variable_length) {
    Handle mem = vlen_string_type(H5Tget_cset(type.get()));
    std::vector<char*> buffer(n, nullptr);
    check(H5Aread(attr, mem.get(), buffer.data()), where + ": cannot read the attribute");
    for (char* s : buffer) out.emplace_back(s ? s : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buffer.data());
  } else {
    const std::size_t size = element_bytes;
    Handle mem = owned(H5Tcopy(type.get()), where);
    std::vector<char> buffer(n * size);
    check(H5Aread(attr, mem.get(), buffer.data()), where + ": cannot read the attribute");
    for (std::size_t i = 0; i < n; ++i) {
      std::string s(buffer.data() + i * size, size);
      s.erase(s.find_last_not_of('\0') + 1);  // NULL padding (npos + 1 == 0 clears an all-NUL string)
      out.push_back(std::move(s));
    }
  }
  return out;
}

void delete_attr(hid_t obj, const std::string& name, const std::string& where) {
  if (check(H5Aexists(obj, name.c_str()), where) > 0) check(H5Adelete(obj, name.c_str()), where + ": cannot replace it");
}

// Creates (replacing) attribute `name` of `type` and `space` and writes `data` (null: no elements).
void write_attr(hid_t obj, const std::string& name, hid_t type, hid_t space, hid_t mem_type, const void* data,
                const std::string& where) {
  delete_attr(obj, name, where);
  Handle attr = owned(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                      where + ": cannot create the attribute");
  if (data) check(H5Awrite(attr.get(), mem_type, data), where + ": cannot write the attribute");
}

Handle simple_space(const std::vector<hsize_t>& dims, const std::string& where) {
  if (dims.empty()) return owned(H5Screate(H5S_SCALAR), where);
  return owned(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), where);
}

void write_strings(hid_t obj, const std::string& name, const std::vector<std::string>& values, bool scalar,
                   const std::string& where) {
  Handle type = vlen_string_type(cset_of(values));
  Handle space = simple_space(scalar ? std::vector<hsize_t>{} : std::vector<hsize_t>{values.size()}, where);
  std::vector<const char*> pointers;
  for (const auto& s : values) pointers.push_back(s.c_str());
  write_attr(obj, name, type.get(), space.get(), type.get(), pointers.data(), where);
}

// The part sizes of numpy's array_split(values, k) for the smallest k that Keras's
// save_attributes_to_hdf5_group accepts: every part, as a fixed-length array (count * longest
// string of the whole list), fits in kAttributeLimit bytes.
std::vector<std::size_t> split_sizes(const std::vector<std::string>& values, const std::string& where) {
  std::size_t itemsize = 1;
  for (const auto& s : values) {
    if (s.size() > kAttributeLimit)
      raise<FileError>("{}: a string of {} bytes does not fit in an HDF5 attribute (limit {})", where, s.size(),
                       kAttributeLimit);
    itemsize = std::max(itemsize, s.size());
  }
  const std::size_t n = values.size();
  std::size_t k = 1;
  while ((n + k - 1) / k * itemsize > kAttributeLimit) ++k;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < k; ++i) sizes.push_back(n / k + (i < n % k ? 1 : 0));
  return sizes;
}

std::vector<std::string> split_names(const std::string& name, hid_t obj, const std::string& where) {
  std::vector<std::string> names;
  while (check(H5Aexists(obj, (name + std::to_string(names.size())).c_str()), where) > 0)
    names.push_back(name + std::to_string(names.size()));
  return names;
}

Handle link_create_plist() {
  Handle plist = owned(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate");
  check(H5Pset_create_intermediate_group(plist.get(), 1), "H5Pset_create_intermediate_group");
  return plist;
}

}  // namespace

// ---- Handle ---------------------------------------------------------------------------------------

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.release();
  }
  return *this;
}

void Handle::reset() {
  // H5Idec_ref closes any kind of identifier (file, group, dataset, type, space, plist) at zero.
  if (id_ >= 0) H5Idec_ref(id_);
  id_ = -1;
}

// ---- Object -------------------------------------------------------------------------------------

Handle::Id Object::id() const {
  silence_errors();
  return handle_.get();
}

std::string Object::child_path(const std::string& name) const {
  if (!name.empty() && name[0] == '/') return name;
  if (name.empty() || name == ".") return path_;
  return (path_ == "/" ? "/" : path_ + "/") + name;
}

std::string Object::where(const std::string& child) const { return file_ + ":" + child_path(child); }

bool Object::has_attr(const std::string& name) const {
  return check(H5Aexists(id(), name.c_str()), where() + ": cannot look up attribute \"" + name + "\"") > 0;
}

std::vector<std::string> Object::attr_names() const {
  std::vector<std::string> names;
  check(H5Aiterate2(
            id(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
            [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
              static_cast<std::vector<std::string>*>(data)->emplace_back(name);
              return 0;
            },
            &names),
        where() + ": cannot list attributes");
  return names;
}

std::string Object::read_string_attr(const std::string& name) const {
  const std::string w = where() + " attribute \"" + name + "\"";
  if (!has_attr(name)) throw FileError(w + ": no such attribute");
  Handle attr = owned(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w + ": cannot open");
  auto values = read_strings(attr.get(), w);
  if (values.size() != 1) raise<FileError>("{}: expected one string, found {}", w, values.size());
  return values[0];
}

bool Object::has_string_array_attr(const std::string& name) const {
  return has_attr(name) || has_attr(name + "0");
}

std::vector<std::string> Object::read_string_array_attr(const std::string& name) const {
  std::vector<std::string> parts = {name};
  if (!has_attr(name)) parts = split_names(name, id(), where());
  if (parts.empty()) throw FileError(where() + ": no attribute \"" + name + "\" (nor \"" + name + "0\", ...)");
  std::vector<std::string> out;
  for (const auto& part : parts) {
    const std::string w = where() + " attribute \"" + part + "\"";
    Handle attr = owned(H5Aopen(id(), part.c_str(), H5P_DEFAULT), w + ": cannot open");
    auto values = read_strings(attr.get(), w);
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}

std::int64_t Object::read_int_attr(const std::string& name) const {
  const std::string w = where() + " attribute \"" + name + "\"";
  if (!has_attr(name)) throw FileError(w + ": no such attribute");
  Handle attr = owned(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w + ": cannot open");
  Handle type = owned(H5Aget_type(attr.get()), w);
  Handle space = owned(H5Aget_space(attr.get()), w);
  const H5T_class_t cls = H5Tget_class(type.get());
  if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw FileError(w + ": expected one number");
  std::int64_t value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), w + ": cannot read");
  return value;
}

void Object::write_string_attr(const std::string& name, const std::string& value) {
  write_strings(id(), name, {value}, /*scalar=*/true, where() + " attribute \"" + name + "\"");
}

void Object::write_string_array_attr(const std::string& name, const std::vector<std::string>& values) {
  const std::string w = where() + " attribute \"" + name + "\"";
  delete_attr(id(), name, w);
  for (const auto& part : split_names(name, id(), w)) delete_attr(id(), part, w);
  if (values.empty()) {  // as numpy's np.asarray([]) that Keras writes: float64, shape (0,)
    Handle space = simple_space({0}, w);
    write_attr(id(), name, H5T_IEEE_F64LE, space.get(), H5T_NATIVE_DOUBLE, nullptr, w);
    return;
  }
  auto sizes = split_sizes(values, w);
  if (sizes.size() == 1) return write_strings(id(), name, values, /*scalar=*/false, w);
  auto first = values.begin();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::string> part(first, first + static_cast<std::ptrdiff_t>(sizes[i]));
    first += static_cast<std::ptrdiff_t>(sizes[i]);
    write_strings(id(), name + std::to_string(i), part, /*scalar=*/false, w);
  }
}

void Object::write_int_attr(const std::string& name, std::int64_t value) {
  const std::string w = where() + " attribute \"" + name + "\"";
  Handle space = simple_space({}, w);
  write_attr(id(), name, H5T_STD_I64LE, space.get(), H5T_NATIVE_INT64, &value, w);
}

// ---- Dataset ------------------------------------------------------------------------------------

Shape Dataset::shape() const {
  Handle space = owned(H5Dget_space(id()), where() + ": cannot read the dataset's shape");
  const int rank = check(H5Sget_simple_extent_ndims(space.get()), where());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where());
  return Shape(std::vector<std::int64_t>(dims.begin(), dims.end()));
}

DType Dataset::dtype() const {
  Handle type = owned(H5Dget_type(id()), where() + ": cannot read the dataset's type");
  const std::size_t size = H5Tget_size(type.get());
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT: return size == 8 ? DType::float64 : DType::float32;
    case H5T_INTEGER:
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE) return size == 1 ? DType::uint8 : DType::int64;
      return size <= 4 ? DType::int32 : DType::int64;
    default: throw FileError(where() + ": the dataset does not hold numbers (strings, compounds, ... are not supported)");
  }
}

Tensor Dataset::read() const { return read(dtype()); }

Tensor Dataset::read(DType dtype) const {
  const H5T_class_t cls = [&] {
    Handle type = owned(H5Dget_type(id()), where() + ": cannot read the dataset's type");
    return H5Tget_class(type.get());
  }();
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) throw FileError(where() + ": the dataset does not hold numbers");
  if (!has_attr(kChecksumAttribute)) {
    Tensor out(shape(), dtype);
    read_into(out);
    return out;
  }
  // Checked on the values as stored (tower's dtypes are read without conversion), then converted.
  Tensor stored(shape(), this->dtype());
  read_into(stored);
  const auto expected = static_cast<std::uint32_t>(read_int_attr(kChecksumAttribute));
  const std::uint32_t actual = crc32_of(stored);
  if (actual != expected)
    raise<ChecksumError>("dataset \"{}\" of \"{}\" is damaged: the CRC32 of its data is {:08x}, but tower stored "
                         "{:08x} (attribute {}) when it wrote the file, so the file changed since (disk or copy "
                         "damage); use an intact copy (a backup, an earlier checkpoint) or save it again. If you "
                         "changed the values on purpose with another tool, delete the attribute",
                         path(), file_name(), actual, expected, kChecksumAttribute);
  if (dtype == stored.dtype()) return stored;
  Tensor out(shape(), dtype);
  read_into(out);
  return out;
}

void Dataset::read_into(Tensor& out) const {
  if (out.num_elements() == 0) return;
  if (H5Dread(id(), memory_type(out.dtype(), where()), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) >= 0) return;
  const std::string reason = hdf5_reason();
  if (reason.find("Fletcher32") != std::string::npos)
    raise<ChecksumError>("dataset \"{}\" of \"{}\" is damaged: HDF5's fletcher32 checksum of its stored data does "
                         "not match ({}), so the file changed after it was written (disk or copy damage); use an "
                         "intact copy (a backup, an earlier checkpoint) or save it again",
                         path(), file_name(), reason);
  throw FileError(where() + ": cannot read the dataset: " + reason);
}

// ---- Group --------------------------------------------------------------------------------------

bool Group::exists(const std::string& path) const {
  // H5Lexists fails (rather than answering false) when an intermediate group is missing, so walk
  // the path one component at a time.
  std::string prefix = !path.empty() && path[0] == '/' ? "/" : "";
  std::size_t start = prefix.size();
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start && path.compare(start, end - start, ".") != 0) {
      if (!prefix.empty() && prefix != "/") prefix += '/';
      prefix.append(path, start, end - start);
      const htri_t found = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
      if (found <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
    }
    start = end + 1;
  }
  return true;
}

bool Group::is_group(const std::string& path) const {
  if (!exists(path)) return false;
  Handle object = owned(H5Oopen(id(), path.c_str(), H5P_DEFAULT), "cannot open " + where(path));
  return H5Iget_type(object.get()) == H5I_GROUP;
}

Group Group::group(const std::string& path) const {
  if (!exists(path)) throw FileError(file_ + ": no group \"" + child_path(path) + "\"");
  return Group(owned(H5Gopen2(id(), path.c_str(), H5P_DEFAULT), "cannot open group " + where(path)), file_,
               child_path(path));
}

Group Group::create_group(const std::string& path) {
  Handle plist = link_create_plist();
  return Group(owned(H5Gcreate2(id(), path.c_str(), plist.get(), H5P_DEFAULT, H5P_DEFAULT),
                     "cannot create group " + where(path)),
               file_, child_path(path));
}

std::vector<std::string> Group::children() const {
  H5G_info_t info;
  check(H5Gget_info(id(), &info), where() + ": cannot list the group");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const std::string w = where() + ": cannot read member " + std::to_string(i);
    const ssize_t size = check(H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT), w);
    std::string name(static_cast<std::size_t>(size) + 1, '\0');
    check(H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT), w);
    name.resize(static_cast<std::size_t>(size));
    names.push_back(std::move(name));
  }
  return names;
}

Dataset Group::dataset(const std::string& path) const {
  if (!exists(path)) throw FileError(file_ + ": no dataset \"" + child_path(path) + "\"");
  return Dataset(owned(H5Dopen2(id(), path.c_str(), H5P_DEFAULT), "cannot open dataset " + where(path)), file_,
                 child_path(path));
}

Dataset Group::write_dataset(const std::string& path, const Tensor& value) {
  const std::string w = where(path);
  const hid_t mem = memory_type(value.dtype(), w);
  const Tensor host = value.to(cpu_device());
  std::vector<hsize_t> dims(host.shape().dims().begin(), host.shape().dims().end());
  Handle space = simple_space(dims, w);
  Handle plist = link_create_plist();
  Handle create = dataset_create_plist(dims, dtype_size(host.dtype()), w);
  Dataset out(owned(H5Dcreate2(id(), path.c_str(), file_type(value.dtype()), space.get(), plist.get(), create.get(),
                               H5P_DEFAULT),
                    "cannot create dataset " + w),
              file_, child_path(path));
  if (host.num_elements() > 0)
    check(H5Dwrite(out.id(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw_data()), "cannot write dataset " + w);
  out.write_int_attr(kChecksumAttribute, crc32_of(host));
  return out;
}

// ---- File ---------------------------------------------------------------------------------------

File::File(Handle file, Handle root, const std::string& name) : Group(std::move(root), name, "/"),
                                                                file_handle_(std::move(file)) {}

File::~File() {
  handle_.reset();  // the root group first, so that releasing the file closes it
  file_handle_.reset();
}

File File::open(const std::string& path) {
  silence_errors();
  if (const std::string why = unreadable_reason(path); !why.empty())
    throw FileError("cannot open \"" + path + "\": " + why);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw FileError("\"" + path + "\" is not an HDF5 file (wrong format, or truncated or corrupt)");
  }
  Handle file = owned(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "cannot open \"" + path + "\"");
  Handle root = owned(H5Gopen2(file.get(), "/", H5P_DEFAULT), "cannot open \"" + path + "\"");
  return File(std::move(file), std::move(root), path);
}

File File::create(const std::string& path) {
  silence_errors();
  Handle file = owned(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                      "cannot create \"" + path + "\"");
  Handle root = owned(H5Gopen2(file.get(), "/", H5P_DEFAULT), "cannot open \"" + path + "\"");
  return File(std::move(file), std::move(root), path);
}

File File::create_in_memory(const std::string& name) {
  silence_errors();
  Handle fapl = owned(H5Pcreate(H5P_FILE_ACCESS), "cannot create \"" + name + "\"");
  check(H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/0), "cannot create \"" + name + "\"");
  Handle file = owned(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                      "cannot create \"" + name + "\"");
  Handle root = owned(H5Gopen2(file.get(), "/", H5P_DEFAULT), "cannot open \"" + name + "\"");
  return File(std::move(file), std::move(root), name);
}

std::vector<char> File::image() {
  flush();
  const std::string what = "cannot read the bytes of \"" + file_name() + "\"";
  const ssize_t size = H5Fget_file_image(file_handle_.get(), nullptr, 0);
  check(size, what);
  std::vector<char> bytes(static_cast<std::size_t>(size));
  check(H5Fget_file_image(file_handle_.get(), bytes.data(), bytes.size()), what);
  return bytes;
}

void File::flush() {
  silence_errors();
  check(H5Fflush(file_handle_.get(), H5F_SCOPE_GLOBAL), "cannot write \"" + file_name() + "\"");
}

void File::close() {
  silence_errors();
  handle_.reset();
  if (file_handle_.valid()) check(H5Fclose(file_handle_.release()), "cannot close \"" + file_name() + "\"");
}

}  // namespace tower::io::hdf5
