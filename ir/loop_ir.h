// Loop IR: the tiling/fusion IR. A program is a list of global buffers (inputs,
// outputs, temporaries) and a list of kernels, launched in order. Each kernel is a
// statement tree (ir/ir.h): loops bound to group.* are the work-groups of the
// launch, loops bound to local.* the work-items of a group; every other loop runs
// inside one work-item. A bound loop of extent E launches E groups (or work-items)
// along its dimension; each dimension is bound at most once per kernel, group
// loops enclose local loops, and both enclose everything else.
#pragma once

#include <array>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/ir.h"

namespace ks {

struct Kernel {
  std::string name;
  Stmt body;
};

struct Program {
  std::string name;
  std::vector<TensorDecl> buffers;
  std::vector<Kernel> kernels;
  const TensorDecl *find_buffer(const std::string &name) const;
};

/// The launch geometry of a kernel, read off its bound loops.
struct LaunchShape {
  std::array<int64_t, 3> groups{1, 1, 1};
  std::array<int64_t, 3> local{1, 1, 1};
  int64_t work_items() const;
  int64_t group_size() const { return local[0] * local[1] * local[2]; }
};

LaunchShape launch_shape(const Kernel &kernel);

/// The global buffers a kernel reads or writes, in the program's buffer order: the
/// kernel's parameters, in this order, for every code generator and launcher.
std::vector<std::string> kernel_buffers(const Program &program, const Kernel &kernel);

/// Bytes of local memory a work-group of the kernel allocates.
int64_t local_memory_bytes(const Kernel &kernel);

/// Iterations of serial and unrolled loops one work-item runs, summed over every
/// loop (a driver may cap this: lavapipe stops a shader's loops after 65535).
int64_t loop_iterations(const Kernel &kernel);

/// The largest product of loop extents along any path of loops through s
/// (unrolled_only: of the unrolled loops alone, i.e. the copies of the innermost body).
int64_t nested_iterations(const Stmt &s, bool unrolled_only);
/// The most copies of an innermost body any kernel of program unrolls.
int64_t unrolled_copies(const Program &program);

/// The buffers s loads from and stores to, global or allocated, by name.
struct BufferUse {
  std::set<std::string> read, written;
};
BufferUse buffers_used(const Stmt &s);

/// The global buffers a kernel reads.
std::vector<std::string> kernel_read_buffers(const Kernel &kernel);
/// The global buffers a kernel writes.
std::vector<std::string> kernel_written_buffers(const Kernel &kernel);

}  // namespace ks
