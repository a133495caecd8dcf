// Files a run creates in a directory others may write (a shared project or scratch folder): never
// opened through a symlink or hard link planted there, so a run cannot be made to clobber another file.
#pragma once

#include <string>

namespace wavel {

/// Opens `path` as a new, empty regular file of this process (`flags`: O_WRONLY or O_RDWR; O_CLOEXEC
/// is added). Whatever had that name (a stale partial file, a planted symlink) is unlinked first,
/// never followed, and the file is created with O_CREAT|O_EXCL|O_NOFOLLOW. Returns the descriptor, or
/// -1 with errno set (EISDIR when a directory has the name).
int create_fresh_file(const std::string& path, int flags);

/// Opens an existing regular file of `path` without following a symlink (`flags`: O_RDONLY or
/// O_RDWR, plus O_CREAT to create it when absent). A symlink (ELOOP), a file with other hard links
/// (EMLINK) or anything not a regular file (EINVAL) is refused, and a FIFO never blocks the open.
/// Returns the descriptor, or -1 with errno set.
int open_regular_file(const std::string& path, int flags);

/// What errno from the two functions above means, for messages.
std::string open_error_text(int error_number);

}  // namespace wavel
