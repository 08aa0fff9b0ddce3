// Parser of the .ks operator DSL (DESIGN.md, "The DSL"). Syntax only: names are
// resolved, sizes bound and types checked by elaborate().
#pragma once

#include <memory>
#include <string>

#include "frontend/ast.h"

namespace ks::frontend {

/// Parses one spec; throws UserError (`file:line:col: error: ...`) on bad syntax.
Spec parse_spec(const std::shared_ptr<const SourceFile> &file);

/// Reads a spec file from disk and parses it; a missing file is a plain UserError.
Spec load_spec(const std::string &path);

}  // namespace ks::frontend
