// The regions a block reads and writes, derived from its body.
#pragma once

#include <vector>

#include "ir/loop_ir.h"

namespace ks {

/// Per global buffer read in body, in order of first read: each dimension is the
/// index itself where every read agrees on it, has no pad and uses no variable
/// defined inside body (a reduction loop, a let); else the whole dimension. An
/// over-approximation: a block never reads outside its regions.
std::vector<Region> read_regions(const Program &program, const Stmt &body);
/// The same for the global buffers body writes.
std::vector<Region> write_regions(const Program &program, const Stmt &body);

}  // namespace ks
