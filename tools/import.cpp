// ksmith import MODEL.py [-o SPEC.ks] [--peer PEER.json] [--python PY] [...]
// A PyTorch module in KernelBench's form to a spec: the work is the Python tool
// tools/ksmith_import.py (torch.fx runs only in Python), run with Debian's Python
// and python3-torch; its options and errors are its own, and so is its exit status.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/cli.h"

#ifndef KS_SOURCE_DIR
#error "KS_SOURCE_DIR names the source tree, where tools/ksmith_import.py lives"
#endif

namespace ks::cli {

Command add_import(CLI::App &app) {
  struct Options {
    std::string python = "/usr/bin/python3";
    std::vector<std::string> args;
  };
  auto o = std::make_shared<Options>();
  CLI::App *command = app.add_subcommand(
      "import", "A PyTorch module in KernelBench's form (Model, get_inputs, get_init_inputs) to a .ks spec and its "
                "peer entry (tools/ksmith_import.py; `ksmith import -- --help` for its options)");
  command->add_option("--python", o->python,
                      "The Python that runs the importer (default /usr/bin/python3, Debian's, with python3-torch)");
  command->add_option("args", o->args, "MODEL.py and the importer's options")->required();
  command->prefix_command();  // everything after MODEL.py is the importer's
  return {command, [o, command]() -> int {
            std::string script = std::string(KS_SOURCE_DIR) + "/tools/ksmith_import.py";
            std::vector<std::string> args = {o->python, script};
            args.insert(args.end(), o->args.begin(), o->args.end());
            for (const std::string &extra : command->remaining()) args.push_back(extra);
            std::vector<char *> argv;
            for (std::string &a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(o->python.c_str(), argv.data());
            throw UserError("error: cannot run " + o->python + " for the importer: " + std::strerror(errno) +
                            " (on Debian: apt install python3-torch)");
          }};
}

}  // namespace ks::cli
