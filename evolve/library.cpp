#include "evolve/library.h"

#include <algorithm>
#include <filesystem>

#include "ir/diagnostic.h"

namespace ks {

std::vector<LibrarySchedule> read_library(const std::string &dir, const std::string &kernel) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw UserError("error: the schedule library '" + dir + "' is not a folder (mutator.library, --library)");
  std::vector<fs::path> files;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error))
    if (entry.path().extension() == ".sched" && entry.path().stem() != kernel) files.push_back(entry.path());
  if (error) throw UserError("error: cannot list the schedule library '" + dir + "': " + error.message());
  std::sort(files.begin(), files.end());
  std::vector<LibrarySchedule> library;
  for (const fs::path &file : files)
    library.push_back({file.filename().string(), parse_schedule(read_source_file(file.string(), "schedule"))});
  return library;
}

}  // namespace ks
