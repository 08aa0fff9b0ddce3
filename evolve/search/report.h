// The HTML report of an evolution run: one self-contained page (inline SVG, CSS and
// script, no network) drawn from the run's data.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ks {

/// The page for a run's data (the schema is in evolve/search/README.md's "Report data").
std::string render_report(const nlohmann::json &data);

}  // namespace ks
