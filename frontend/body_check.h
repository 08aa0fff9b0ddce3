// A kernel body checked with Clang (libTooling 15) before any device sees it: parsed
// as OpenCL C 1.2 with Clang's own OpenCL headers, then held to its launch plan.
// Each problem names the rule it breaks, so that a proposer (a model) learns which:
//
//   syntax                Clang's errors, with line and column
//   kernel                a launched kernel is not a __kernel function of the body
//   arity                 a kernel's parameter count differs from its launch's arguments
//   type                  a parameter does not take its argument: a tensor or scratch
//                         buffer wants a __global (or, for inputs, __constant) pointer
//                         to its element type (or a vector of it), a size a 32-bit int
//   output-not-written    no kernel stores to an output
//   input-written         a kernel stores to an input (or an atomic changes it)
//   input-unread          no kernel reads an input
//   printf                printf in a body (output the evaluator cannot see, and slow)
//   pointer-from-integer  an integer made into a pointer (a way around the plan's buffers)
//
// Stores and reads are followed through pointer variables, pointer arithmetic and
// calls to the body's own functions. The check is syntactic: what it cannot see (a
// store through a pointer it cannot trace) the evaluator's runs still catch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/types.h"

namespace ks::frontend {

/// What one parameter of a launched kernel receives.
struct CheckedArg {
  enum class Kind { Input, Output, Scratch, Size };
  Kind kind = Kind::Input;
  std::string name;
  DType type = DType::F32;  // of a buffer's elements
};

struct CheckedLaunch {
  std::string kernel;
  std::vector<CheckedArg> args;
};

struct BodyProblem {
  std::string rule;
  int line = 0, column = 0;  // in the body; 0 where the problem has no place
  std::string message;
};

/// What the AST says about a body, for the archive's features.
struct BodyFeatures {
  int kernels = 0;  // __kernel functions defined
  int max_loop_depth = 0;
  int64_t local_memory_bytes = 0;  // __local variables, summed over the body
  int barriers = 0;                // barrier calls, as written
  int vector_width = 1;            // the widest vector type or vloadN/vstoreN used
};

struct BodyCheck {
  std::vector<BodyProblem> problems;
  BodyFeatures features;
  bool ok() const { return problems.empty(); }
  /// One problem a line: "LABEL:LINE:COL: [rule] message".
  std::string text(const std::string &label) const;
};

/// Checks source against the launches; inputs: every input of the spec (one given
/// to no launch is unread). defines: `-D` macros (the older form's sizes). Never
/// throws for a bad body: everything wrong is a problem.
BodyCheck check_body(const std::string &source, const std::vector<CheckedLaunch> &launches,
                     const std::vector<std::string> &inputs,
                     const std::vector<std::pair<std::string, int64_t>> &defines = {});

}  // namespace ks::frontend
