// HDF5 files through the HDF5 C library: small RAII owners for files, groups, datasets and attributes.
//
// Only what Keras files need: groups by path, datasets read into and written from Tensors, and
// attributes holding strings, string lists (with Keras's split into "name0", "name1", ... when long)
// and integers. Every HDF5 failure throws io::FileError naming the file, the object path and HDF5's
// own reason; HDF5's automatic printing of its error stack is switched off.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/tensor.h"

namespace tower::io {

// A file that cannot be opened, read or written, or that does not hold what the reader expects.
class FileError : public Error {
 public:
  using Error::Error;
};

// A dataset whose data does not match the checksum stored with it: the file was damaged (or changed by
// another tool) after it was written.
class ChecksumError : public FileError {
 public:
  using FileError::FileError;
};

namespace hdf5 {

// Keras splits a string-list attribute larger than this into numbered parts (HDF5's object header
// limit for attributes in the oldest file format).
inline constexpr std::size_t kAttributeLimit = 64512;

// The dataset attribute holding the CRC32 (zlib's) of the dataset's bytes as stored (little-endian,
// row-major), written by write_dataset and checked by read (docs/file-formats.md, "Checksums").
inline constexpr const char* kChecksumAttribute = "tower_crc32";

// Owns one HDF5 identifier (hid_t) and releases it. Movable, not copyable.
class Handle {
 public:
  using Id = std::int64_t;  // hid_t, kept out of this header so <hdf5.h> stays private
  Handle() = default;
  explicit Handle(Id id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(other.release()) {}
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  Id get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  Id release() {
    Id id = id_;
    id_ = -1;
    return id;
  }
  void reset();

 private:
  Id id_ = -1;
};

// A group or a dataset: something with a path and attributes.
class Object {
 public:
  const std::string& file_name() const { return file_; }
  const std::string& path() const { return path_; }  // "/dense_1"

  bool has_attr(const std::string& name) const;
  std::vector<std::string> attr_names() const;

  // A string (variable- or fixed-length, ASCII or UTF-8; trailing NULs stripped).
  std::string read_string_attr(const std::string& name) const;
  // A list of strings (fixed-length NULL-padded or variable-length). If `name` is absent, the
  // concatenation of "name0", "name1", ... up to the first missing one, as Keras splits long lists.
  // An empty numeric array (what Keras writes for an empty list) reads as an empty list.
  std::vector<std::string> read_string_array_attr(const std::string& name) const;
  // True when `name` or its first split part "name0" exists.
  bool has_string_array_attr(const std::string& name) const;
  std::int64_t read_int_attr(const std::string& name) const;

  // Writers replace an existing attribute of that name. Strings are variable-length (h5py 3 style),
  // ASCII unless they contain other bytes (then UTF-8).
  void write_string_attr(const std::string& name, const std::string& value);
  // Splits into "name0", "name1", ... as Keras does when the list as a fixed-length array would
  // exceed kAttributeLimit bytes; an empty list is written as an empty float64 array, as Keras does.
  void write_string_array_attr(const std::string& name, const std::vector<std::string>& values);
  void write_int_attr(const std::string& name, std::int64_t value);

 protected:
  Object() = default;
  Object(Handle handle, std::string file, std::string path)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)) {}
  Handle::Id id() const;  // the handle, with HDF5's error printing silenced on this thread
  // "file.h5" path "/a/b" -> "file.h5:/a/b", as errors name objects.
  std::string where(const std::string& child = "") const;
  std::string child_path(const std::string& name) const;

  Handle handle_;
  std::string file_;
  std::string path_;
};

class Dataset : public Object {
 public:
  Shape shape() const;
  // The dtype read() returns: float32, float64, int32, int64 or uint8 as stored; other integer and
  // float widths are widened (int16 -> int32, float16 -> float32); anything else throws.
  DType dtype() const;
  // The whole dataset as a cpu tensor of dtype() / of `dtype` (HDF5 converts the values). A dataset
  // with a kChecksumAttribute (tower wrote it) is checked against it, and HDF5 checks the fletcher32
  // filter of a dataset that has one: damaged data throws ChecksumError naming the file and the dataset.
  Tensor read() const;
  Tensor read(DType dtype) const;

 private:
  friend class Group;
  using Object::Object;
  void read_into(Tensor& out) const;
};

class Group : public Object {
 public:
  // Paths are relative to this group, or absolute ("/a/b"). exists() checks every component.
  bool exists(const std::string& path) const;
  bool is_group(const std::string& path) const;  // exists and is a group
  Group group(const std::string& path) const;
  // Creates the group and any missing intermediate groups.
  Group create_group(const std::string& path);
  // Names of this group's members (groups and datasets), in HDF5's order (alphabetical).
  std::vector<std::string> children() const;

  Dataset dataset(const std::string& path) const;
  Tensor read_dataset(const std::string& path) const { return dataset(path).read(); }
  // Writes `value` (any device; float32, float64, int32, int64 or uint8) as a new little-endian
  // dataset, creating intermediate groups ("dense_1/kernel:0" makes group "dense_1"). Checksummed
  // twice: a kChecksumAttribute that tower checks, and (unless scalar or empty) a chunked layout with
  // HDF5's fletcher32 filter, which every HDF5 reader (h5py, so Keras) checks.
  Dataset write_dataset(const std::string& path, const Tensor& value);

 protected:
  friend class File;
  using Object::Object;
};

// A file; also its root group "/".
class File : public Group {
 public:
  static File open(const std::string& path);    // read-only
  static File create(const std::string& path);  // read-write, truncating an existing file
  // A file that lives in memory only (HDF5's core driver); `name` is for messages. image() gives
  // its bytes, so the caller does the disk I/O and HDF5 never sees a failed write.
  static File create_in_memory(const std::string& name);

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  ~File();

  Group root() const { return group("/"); }
  void flush();
  // The bytes of the whole file (flushed first), as they would be on disk.
  std::vector<char> image();
  // Closes the file and reports failure (the destructor closes silently). Every Group and Dataset
  // opened from it must be gone before, or HDF5 keeps the file open until they are.
  void close();

 private:
  File(Handle file, Handle root, const std::string& name);
  Handle file_handle_;
};

// Writes a new file at `path` atomically: write(file) fills a file in memory, whose bytes are
// written to temporary_name(target), synced and renamed over the target (save_target: `path`, or the
// file a symbolic link at `path` names). On any failure the temporary file is removed, an existing
// file is left as it was, and the error names `what` (e.g. `save_weights("x.h5")`). First it makes
// check_destination's checks; a file it replaces keeps its mode (and owner, where the process may set
// it). A file size limit (ulimit -f) fails like a full disk: the SIGXFSZ it raises is blocked and
// discarded (atomic_write.cpp).
void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(File&)>& write);
// "<target>.tmp-<pid>": the temporary file a save writes beside its target.
std::string temporary_name(const std::string& target);

// The checks of a save, file_checks.cpp. save_target: the file a save of `path` replaces: `path`, or,
// where it is a symbolic link (a chain of them), the file the link names, as h5py and Keras write
// through a link. Throws FileError for an empty name, a link loop, and a target that exists and is
// neither a regular file nor a directory (a FIFO, a device, a socket): a save never replaces those.
std::string save_target(const std::string& path, const std::string& what);
// save_target's checks, then: the target's directory exists, the target is not a directory, and it is
// not read-only (no write permission for the process, or no write bit at all, which root's access()
// would ignore; the message says whether another user owns it or its file system is read-only): like
// h5py and Keras, tower does not replace a file that could not be written in place. Throws FileError
// starting with `what`; returns the target.
std::string check_destination(const std::string& path, const std::string& what);
// check_destination, then creates and removes the temporary file write_file_atomically would create,
// so that a save is known to be possible before a long computation (io::check_writable).
std::string check_can_create(const std::string& path, const std::string& what);  // the target

}  // namespace hdf5

// Why `path` cannot be opened for reading as a file, in words for a message ("no such file", "it is a
// directory; ...", "Permission denied (... chmod u+r ...)"), or "" when it can (file_checks.cpp).
std::string unreadable_reason(const std::string& path);

}  // namespace tower::io
