// Parsers of the printed forms of Graph IR and Loop IR (ir/printer.h). Printing a
// parsed text gives the same text back, and parsing a printed IR gives the same IR.
// Errors are the user's: `file:line:col: error: ...` with the line and a caret.
#pragma once

#include <memory>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

Graph parse_graph(const std::shared_ptr<const SourceFile> &file);
Program parse_program(const std::shared_ptr<const SourceFile> &file);

}  // namespace ks
