// ksmith import MODEL.py [-o SPEC.ks] [--peer PEER.json] [--python PY] [...]
// A PyTorch module in KernelBench's form to a spec: the work is the Python package
// tools/ksmith_import/ (torch.fx runs only in Python), run as a directory (its
// __main__.py) with Debian's Python and python3-torch; its options and errors are its
// own, and so is its exit status.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "tools/cli.h"

#ifndef KS_SOURCE_DIR
#error "KS_SOURCE_DIR names the source tree, where tools/ksmith_import/ lives"
#endif

namespace ks::cli {

Command add_import(CLI::App &app) {
  auto python = std::make_shared<std::string>("/usr/bin/python3");
  CLI::App *command = app.add_subcommand(
      "import",
      "A PyTorch module in KernelBench's form (Model, get_inputs, get_init_inputs) to a .ks spec and its "
      "peer entry (tools/ksmith_import/; `ksmith import -- --help` for its options)");
  command->add_option("--python", *python,
                      "The Python that runs the importer (default /usr/bin/python3, Debian's, with python3-torch)");
  // MODEL.py and everything after it reach the importer as written, in order: no positional
  // option here, as CLI11 would collect every positional into it and leave the importer only
  // its options, their values gone ahead of them.
  command->prefix_command();
  command->footer("MODEL.py [-o SPEC.ks] [--peer PEER.json] [--name NAME] [--check-sizes N=V,...]: the importer's");
  return {command, [python, command]() -> int {
            std::vector<std::string> rest = command->remaining();
            if (rest.empty()) {
              std::cerr << "error: ksmith import needs MODEL.py (ksmith import MODEL.py [-o SPEC.ks] ...)\n";
              return 2;
            }
            std::string script = std::string(KS_SOURCE_DIR) + "/tools/ksmith_import";  // the package: its __main__.py
            std::vector<std::string> args = {*python, script};
            args.insert(args.end(), rest.begin(), rest.end());
            std::vector<char *> argv;
            for (std::string &a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(python->c_str(), argv.data());
            throw UserError("error: cannot run " + *python + " for the importer: " + std::strerror(errno) +
                            " (on Debian: apt install python3-torch)");
          }};
}

}  // namespace ks::cli
