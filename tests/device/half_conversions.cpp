// The 16-bit conversions against a table on a device: see half_conversions.h.
#include "tests/device/half_conversions.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "frontend/parser.h"
#include "ir/diagnostic.h"
#include "ir/types.h"
#include "passes/schedule.h"

namespace ks {

namespace {

float float_of_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string describe(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

}  // namespace

const std::vector<HalfRow> &half_rows() {
  static const std::vector<HalfRow> rows = {
      {1.0f, 0x3c00, 0x3f80},
      {-2.0f, 0xc000, 0xc000},
      {-0.0f, 0x8000, 0x8000},
      {1.0f + 0x1p-11f, 0x3c00, 0x3f80},             // f16's tie: to the even 1.0
      {1.0f + 3 * 0x1p-11f, 0x3c02, 0x3f80},         // f16's tie: to the even 1 + 2^-9
      {1.0f + 0x1p-8f, 0x3c04, 0x3f80},              // bf16's tie: to the even 1.0
      {1.0f + 3 * 0x1p-8f, 0x3c0c, 0x3f82},          // bf16's tie: to the even 1 + 2^-6
      {65504.0f, 0x7bff, 0x4780},                    // f16's largest (bf16: 65536)
      {65519.0f, 0x7bff, 0x4780},                    // below the f16 tie with 2^16: 65504
      {65520.0f, 0x7c00, 0x4780},                    // the tie: to infinity
      {-70000.0f, 0xfc00, 0xc789},                   //
      {0x1p-14f, 0x0400, 0x3880},                    // f16's least normal
      {0x1p-24f, 0x0001, 0x3380},                    // f16's least subnormal
      {0x1p-25f, 0x0000, 0x3300},                    // the tie with 0: to the even 0
      {3 * 0x1p-25f, 0x0002, 0x33c0},                // the tie between 1 and 2 steps: 2
      {0.1f, 0x2e66, 0x3dcd},                        //
      {3.4028235e38f, 0x7c00, 0x7f80},               // f32's largest: infinite in both
      {float_of_bits(0x7f7f7fffu), 0x7c00, 0x7f7f},  // bf16's largest, from below the tie
      {INFINITY, 0x7c00, 0x7f80},
      {-INFINITY, 0xfc00, 0xff80},
  };
  return rows;
}

std::vector<std::string> check_half_conversions(runtime::Device &device, Target target) {
  const std::vector<HalfRow> &rows = half_rows();
  const size_t n = 24;  // the rows, a NaN, zeros to a multiple of 8
  const CodeFeatures features = code_features(device.info());
  std::vector<std::string> failures;
  enum Kind { Store, Round, Read };
  for (const Kind kind : {Store, Round, Read})
    for (const char *schedule : {"", "split y.i 8 -> io iv\nvectorize y.iv\n"})
      for (const DType type : {DType::F16, DType::BF16}) {
        const std::string t = dtype_name(type);
        const char *kinds[] = {"stored", "rounded in registers", "read"};
        const std::string where = t + " " + kinds[kind] + (*schedule ? ", vectors of 8" : ", one element a statement");
        const std::string in = kind == Read ? t : "f32", out = kind == Store ? t : "f32";
        const std::string body = kind == Round ? t + "(x[i])" : "x[i]";
        const std::string spec_text = "kernel k(x: " + in + "[N]) -> y: " + out + "[N] where N = " + std::to_string(n) +
                                      " { y[i] = " + body + " }";
        const Compiled c = compile_spec(
            frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{"k.ks", spec_text})),
            frontend::SizeSet::Default, {},
            parse_schedule(std::make_shared<SourceFile>(SourceFile{"k.sched", schedule})), target, features);
        device.build(c.binary);
        // x: the rows' f32 values, or (to read) their 16-bit bits; a NaN; zeros.
        std::vector<float> xf(n, 0.0f);
        std::vector<uint16_t> xh(n, 0);
        for (size_t i = 0; i < rows.size(); ++i) {
          xf[i] = rows[i].value;
          xh[i] = type == DType::F16 ? rows[i].f16 : rows[i].bf16;
        }
        xf[rows.size()] = NAN;
        xh[rows.size()] = half_bits(type, NAN);
        const size_t in_bytes = kind == Read ? 2 : 4, out_bytes = kind == Store ? 2 : 4;
        runtime::ScopedBuffer bx(device, n * in_bytes), by(device, n * out_bytes);
        device.write(bx.id, kind == Read ? static_cast<const void *>(xh.data()) : xf.data(), n * in_bytes);
        device.run(launch_plan(c, {{"x", bx.id}, {"y", by.id}}));
        // Each element as a double: a 16-bit output's value, an f32 output's float.
        std::vector<double> y(n);
        if (kind == Store) {
          std::vector<uint16_t> bits(n);
          device.read(by.id, bits.data(), n * 2);
          for (size_t i = 0; i < n; ++i) y[i] = half_value(type, bits[i]);
        } else {
          std::vector<float> f(n);
          device.read(by.id, f.data(), n * 4);
          y.assign(f.begin(), f.end());
        }
        for (size_t i = 0; i < rows.size(); ++i) {  // the value and its sign (-0 stays -0)
          const double want = half_value(type, type == DType::F16 ? rows[i].f16 : rows[i].bf16);
          if (y[i] != want || std::signbit(y[i]) != std::signbit(want))
            failures.push_back(where + ": " + describe(rows[i].value) + " gave " + describe(y[i]) + ", not " +
                               describe(want));
        }
        if (!std::isnan(y[rows.size()])) failures.push_back(where + ": a NaN gave " + describe(y[rows.size()]));
        for (size_t i = rows.size() + 1; i < n; ++i)
          if (y[i] != 0) failures.push_back(where + ": 0 gave " + describe(y[i]));
      }
  return failures;
}

}  // namespace ks
