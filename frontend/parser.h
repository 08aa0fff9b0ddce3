// Parser of the .ks operator DSL (DESIGN.md, "The DSL"). Syntax only: names are
// resolved, sizes bound and types checked by elaborate().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "frontend/ast.h"
#include "ir/lexer.h"
#include "ir/types.h"

namespace ks::frontend {

/// Parses one spec; throws UserError (`file:line:col: error: ...`) on bad syntax.
Spec parse_spec(const std::shared_ptr<const SourceFile> &file);

/// Parses one expression of the DSL's grammar at the stream's position (a kernel
/// body's plan writes its sizes so); throws UserError at a bad token.
AstExprPtr parse_expression(TokenStream &ts);

/// Reads a spec file from disk and parses it; a missing file is a plain UserError.
/// With dtype, the spec as with_dtype gives it.
Spec load_spec(const std::string &path, std::optional<DType> dtype = std::nullopt);

/// The spec's text with each tensor it declares f32 (inputs and outputs) declared
/// dtype instead, and the rest as written: a suite run at another precision than its
/// specs say (`--dtype bf16`). Intermediates follow, by the DSL's rule of types.
std::string with_dtype(const std::shared_ptr<const SourceFile> &file, DType dtype);

/// The --dtype text (f32, f16, bf16): the type, or none for "".
std::optional<DType> parse_spec_dtype(const std::string &text);

}  // namespace ks::frontend
