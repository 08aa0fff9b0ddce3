// ksmith primitives: the schedule language's primitives, an example and what it does
// each, from the registry (passes/primitive_info.h).
#include <algorithm>
#include <iostream>

#include "passes/primitive_info.h"
#include "tools/cli.h"

namespace ks::cli {

Command add_primitives(CLI::App &app) {
  CLI::App *command = app.add_subcommand("primitives", "List the schedule primitives: an example and what it does");
  return {command, [] {
            size_t width = 0;
            for (PrimitiveKind k : all_primitive_kinds())
              width = std::max(width, std::string(primitive_info(k).example).size());
            for (PrimitiveKind k : all_primitive_kinds()) {
              const PrimitiveInfo &info = primitive_info(k);
              std::cout << info.example << std::string(width + 2 - std::string(info.example).size(), ' ') << info.doc
                        << "\n";
            }
            std::cout << "\nA schedule is one step a line, after its rewrites (`ksmith rewrite`); names are "
                         "stages and loops as `ksmith inspect SPEC --print-after=lower` prints them.\n";
            return 0;
          }};
}

}  // namespace ks::cli
