// The checks a save makes before it writes (check_destination, check_can_create, save_target) and the
// reason a file cannot be read (unreadable_reason), declared in hdf5.h: each says what is wrong with a
// path in the user's terms, and how to fix it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "tower/io/hdf5.h"

namespace tower::io {

namespace {

namespace fs = std::filesystem;

// What a file that is not a regular file or a directory is, for messages.
std::string special_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string unreadable_reason(const std::string& path) {
  if (path.empty()) return "the file name is empty";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return "no such file";
    if (err == ELOOP) return "it is a symbolic link that leads back to itself (a loop)";
    return std::strerror(err);
  }
  if (S_ISDIR(st.st_mode)) return "it is a directory; give the path of a file";
  if (!S_ISREG(st.st_mode)) return "it is " + special_kind(st.st_mode) + ", not a file";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES)
      return fmt::format("{} (you may not read it: give yourself read permission, chmod u+r \"{}\", or ask its owner)",
                         std::strerror(err), path);
    return std::strerror(err);
  }
  ::close(fd);
  return "";
}

namespace hdf5 {

std::string save_target(const std::string& path, const std::string& what) {
  if (path.empty()) raise<FileError>("{}: the file name is empty; give the name of the file to write", what);
  // A symbolic link is followed to the file it names, through a chain of links, as h5py and Keras do
  // when they open it for writing: the save replaces that file, in its directory, and the link stays.
  std::string target = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    if (hops == 40)  // the kernel's own limit (ELOOP)
      raise<FileError>("{}: \"{}\" is a symbolic link that leads back to itself (a loop); remove the link or save "
                       "under another name", what, path);
    std::error_code ec;
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) raise<FileError>("{}: cannot read the symbolic link \"{}\": {}", what, target, ec.message());
    target = next.is_absolute() ? next.string() : (fs::path(target).parent_path() / next).string();
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    raise<FileError>("{}: \"{}\"{} is {}; a save replaces only a regular file: save under another name", what, path,
                     target == path ? "" : " (a link to \"" + target + "\")", special_kind(st.st_mode));
  return target;
}

std::string check_destination(const std::string& path, const std::string& what) {
  const std::string target = save_target(path, what);
  const std::string shown = target == path ? "\"" + path + "\"" : "\"" + path + "\" (a link to \"" + target + "\")";
  const fs::path dir = fs::path(target).parent_path();
  std::error_code ec;
  if (!dir.empty() && fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    raise<FileError>("{}: \"{}\" is not a directory (it is a file)", what, dir.string());
  if (!dir.empty() && !fs::is_directory(dir, ec))
    raise<FileError>("{}: the directory \"{}\" does not exist (create it first)", what, dir.string());
  if (fs::is_directory(target, ec)) raise<FileError>("{}: {} is a directory; give a file name", what, shown);
  // The rename would replace a file that could not be written in place (and take its mode and
  // owner): refused, as h5py and Keras cannot open it for writing either. Root's access() says yes
  // to any file, so a file without any write bit counts as read-only too.
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || ((st.st_mode & 0222) != 0 && ::access(target.c_str(), W_OK) == 0))
    return target;
  struct statvfs fs_info {};
  if (::statvfs(target.c_str(), &fs_info) == 0 && (fs_info.f_flag & ST_RDONLY) != 0)
    raise<FileError>("{}: {} is on a read-only file system; save it elsewhere", what, shown);
  if (st.st_uid != ::geteuid() && ::geteuid() != 0)
    raise<FileError>("{}: {} is read-only to you: it belongs to another user (uid {}, mode {:04o}); tower does not "
                     "replace a file it could not write in place: save under another name, or ask its owner",
                     what, shown, st.st_uid, st.st_mode & 07777);
  raise<FileError>("{}: {} is read-only (mode {:04o}); tower does not replace a read-only file: make it writable "
                   "(chmod u+w \"{}\") or save under another name",
                   what, shown, st.st_mode & 07777, target);
}

std::string check_can_create(const std::string& path, const std::string& what) {
  const std::string target = check_destination(path, what);
  const std::string scratch = temporary_name(target);
  const int fd = ::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) return target;  // a file of that name: the directory is writable
    const std::string dir = fs::path(target).parent_path().string();
    struct statvfs fs_info {};
    const bool read_only = ::statvfs(dir.empty() ? "." : dir.c_str(), &fs_info) == 0 &&
                           (fs_info.f_flag & ST_RDONLY) != 0;
    raise<FileError>("{}: cannot create files in the directory \"{}\" (\"{}\": {}); {}", what,
                     dir.empty() ? "." : dir, scratch, std::strerror(err),
                     read_only ? "it is on a read-only file system: save elsewhere"
                               : "choose a directory you can write to");
  }
  ::close(fd);
  ::unlink(scratch.c_str());
  return target;
}

}  // namespace hdf5
}  // namespace tower::io
