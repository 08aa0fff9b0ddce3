#include "evolve/search/library.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "evolve/search/genome.h"
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

std::vector<LibraryStage> fitting_stages(const Graph &graph, const std::vector<LibrarySchedule> &library) {
  std::set<std::string> ours;
  for (const Stage &stage : graph.stages) ours.insert(stage.output);
  std::vector<LibraryStage> out;
  std::set<std::string> seen;  // the kept steps, as printed
  for (const LibrarySchedule &source : library) {
    std::vector<std::string> stages;
    for (const Primitive &p : source.schedule.steps)
      if (ours.count(p.stage) && std::find(stages.begin(), stages.end(), p.stage) == stages.end())
        stages.push_back(p.stage);
    for (const std::string &stage : stages) {
      Schedule alone;
      for (const Primitive &p : source.schedule.steps)
        if (p.stage == stage) alone.steps.push_back(p);
      const size_t of = alone.steps.size();
      Schedule kept = repaired(graph, alone);
      if (kept.steps.empty() || !seen.insert(print_schedule(kept)).second) continue;
      out.push_back({source.name, stage, kept.steps, of});
    }
  }
  return out;
}

}  // namespace ks
