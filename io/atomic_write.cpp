// Atomic saves (see hdf5.h, "write_file_atomically"): a file is filled in memory, written to a
// temporary file beside its target, synced and renamed over it. The checks a save makes before it
// writes are in file_checks.cpp.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tower/core/error.h"
#include "tower/io/hdf5.h"

namespace tower::io::hdf5 {

namespace {

// A write past the file size limit (RLIMIT_FSIZE, ulimit -f) raises SIGXFSZ, whose default action kills
// the process, leaving the temporary file behind. While a save writes, the signal is blocked on the
// calling thread only, so that write() fails with EFBIG as on a full disk and the save reports it; a
// SIGXFSZ raised meanwhile (the kernel sends it to the writing thread) is taken off the pending set
// before the old mask returns, so it is never delivered. Blocking, rather than SIG_IGN, leaves the
// process's disposition (a handler of the user's, other threads) as it was.
class FileSizeSignalBlocked {
 public:
  FileSizeSignalBlocked() {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz_, &old_mask_);
    was_pending_ = pending();
  }
  ~FileSizeSignalBlocked() {
    if (!was_pending_ && pending()) {
      const timespec now{0, 0};
      while (sigtimedwait(&xfsz_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  FileSizeSignalBlocked(const FileSizeSignalBlocked&) = delete;
  FileSizeSignalBlocked& operator=(const FileSizeSignalBlocked&) = delete;

 private:
  static bool pending() {
    sigset_t set;
    return sigpending(&set) == 0 && sigismember(&set, SIGXFSZ) == 1;
  }
  sigset_t xfsz_{}, old_mask_{};
  bool was_pending_ = false;
};

// What to do about a failed write, for the message.
std::string write_error_hint(int err) {
  rlimit limit{};
  if (err == EFBIG && ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    return fmt::format(" (the file size limit, ulimit -f, is {} bytes: raise it)", limit.rlim_cur);
  if (err == ENOSPC || err == EDQUOT) return " (free space on that disk, or save elsewhere)";
  return "";
}

// Creates `path` holding `bytes` and syncs it to disk (a crash just after a rename must not leave an
// empty file). A full disk or a file size limit shows up here as a FileError, the file removed.
// `replaced` is the file it will replace (null: none), whose mode and owner it takes.
void write_bytes_synced(const std::string& path, const std::string& what, const std::vector<char>& bytes,
                        const struct stat* replaced) {
  // O_EXCL: a link or a special file of that name is never written through. A regular file of that
  // name is a save's leftover (the name holds this process's ID), replaced.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  struct stat leftover {};
  if (fd < 0 && errno == EEXIST && ::lstat(path.c_str(), &leftover) == 0 && S_ISREG(leftover.st_mode) &&
      ::unlink(path.c_str()) == 0)
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) raise<FileError>("{}: cannot create \"{}\": {}", what, path, std::strerror(errno));
  if (replaced) {
    // The owner only where the process may give the file away (root); the mode after it, as chown
    // clears set-user-ID bits.
    if (::fchown(fd, replaced->st_uid, replaced->st_gid) != 0) {
    }
    if (::fchmod(fd, replaced->st_mode & 07777) != 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      raise<FileError>("{}: cannot give \"{}\" the mode of the file it replaces: {}", what, path, std::strerror(err));
    }
  }
  std::size_t done = 0;
  {
    FileSizeSignalBlocked blocked;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        ::unlink(path.c_str());
        raise<FileError>("{}: cannot write \"{}\" ({} of {} bytes written): {}{}", what, path, done, bytes.size(),
                         std::strerror(err), write_error_hint(err));
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    raise<FileError>("{}: cannot sync \"{}\": {}{}", what, path, std::strerror(err), write_error_hint(err));
  }
}

}  // namespace

std::string temporary_name(const std::string& target) { return target + ".tmp-" + std::to_string(::getpid()); }

void write_file_atomically(const std::string& path, const std::string& what, const std::function<void(File&)>& write) {
  // Through a symbolic link: the file it names is replaced, from a temporary file in its directory.
  const std::string target = check_destination(path, what);
  struct stat replaced {};
  const bool replacing = ::stat(target.c_str(), &replaced) == 0 && S_ISREG(replaced.st_mode);
  const std::string tmp = temporary_name(target);
  bool created = false;
  try {
    std::vector<char> bytes;
    {
      File file = File::create_in_memory(tmp);
      write(file);
      bytes = file.image();
      file.close();
    }
    write_bytes_synced(tmp, what, bytes, replacing ? &replaced : nullptr);
    created = true;
    if (std::rename(tmp.c_str(), target.c_str()) != 0)
      raise<FileError>("{}: cannot replace \"{}\" by the file just written: {}", what, target, std::strerror(errno));
  } catch (const FileError& e) {  // HDF5's errors name the temporary file: say which save failed
    if (created) ::unlink(tmp.c_str());
    std::string message = e.what();
    if (message.rfind(what, 0) != 0) message = what + ": " + message;
    throw FileError(message + (replacing ? " (\"" + path + "\" is unchanged)" : " (no file was written)"));
  } catch (...) {
    if (created) ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace tower::io::hdf5
