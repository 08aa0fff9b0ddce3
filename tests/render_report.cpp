// render_report IN.json OUT.html: the evolve report of a run's data, written as `ksmith evolve`
// writes it, so that tests/check_report.py can open the very page in a browser.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "evolve/search/report.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: render_report IN.json OUT.html\n";
    return 2;
  }
  nlohmann::json data;
  try {
    std::ifstream in(argv[1]);
    if (!in) throw std::runtime_error(std::string("cannot read ") + argv[1]);
    data = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    std::cerr << "render_report: " << e.what() << "\n";
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary);
  out << ks::render_report(data);
  out.close();
  if (!out) {
    std::cerr << "render_report: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
