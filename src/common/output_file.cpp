// Files created without following planted links; see output_file.hpp.
#include "wavel/common/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace wavel {

int create_fresh_file(const std::string& path, int flags) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      errno = EISDIR;
      return -1;
    }
    // unlink removes the name itself: a symlink goes, its target stays untouched.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return -1;
  }
  // O_EXCL fails on any name that reappeared meanwhile, a symlink included, so nothing is followed.
  return ::open(path.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}

int open_regular_file(const std::string& path, int flags) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  struct stat st {};
  int why = 0;
  if (::fstat(fd, &st) != 0) {
    why = errno;
  } else if (!S_ISREG(st.st_mode)) {
    why = EINVAL;
  } else if (st.st_nlink > 1) {
    why = EMLINK;
  } else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    why = errno;
  }
  if (why == 0) return fd;
  ::close(fd);
  errno = why;
  return -1;
}

std::string open_error_text(int error_number) {
  switch (error_number) {
    case ELOOP:
      return "it is a symbolic link, which this tool does not follow in an output directory (remove it)";
    case EMLINK:
      return "it has other hard links, so writing it would change another file too (remove it)";
    case EINVAL:
      return "it is not a regular file";
    case EISDIR:
      return "it is a directory";
    default:
      return std::strerror(error_number);
  }
}

}  // namespace wavel
