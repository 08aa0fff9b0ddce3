// Random specs (random_spec.h): each family a function writing `.ks` text.
#include "evolve/fuzz/random_spec.h"

#include <vector>

namespace ks {

std::string rewrite_pattern_spec(std::mt19937 &rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto size = [&](int lo, int hi) { return lo + pick(hi - lo + 1); };
  const std::string scale = std::to_string(size(1, 4)) + ".5";
  std::string text;
  switch (pick(7)) {
    case 0: {  // linear layer, affine chain, a reduction over its outputs
      const int m = size(2, 5), n = size(2, 8), k = size(2, 6), window = size(1, 2);
      const int groups = (n / window) * window == n ? n / window : 1;
      const std::string chain =
          std::vector<std::string>{"acc[i, j]", "(acc[i, j] + b[j]) * " + scale, "acc[i, j] / " + scale + " - b[j]",
                                   "acc[i, j] + acc[i, j]"}[pick(4)];
      text = "kernel g(x: f32[M, K], w: f32[N, K], b: f32[N]) -> y: f32[M, 1] where M = " + std::to_string(m) +
             ", N = " + std::to_string(n) + ", K = " + std::to_string(k) +
             " {\n  acc[i, j] = sum(k) x[i, k] * w[j, k]\n";
      switch (pick(3)) {
        case 0: text += "  t[i, u: 1] = sum(j: N) " + chain + "\n"; break;
        case 1: text += "  t[i, u: 1] = sum(j: N) " + chain + " / N\n"; break;
        default:
          text += "  p[i, q: " + std::to_string(groups) + "] = sum(r: " + std::to_string(n / groups) + ") acc[i, q * " +
                  std::to_string(n / groups) + " + r] / " + std::to_string(n / groups) +
                  ".0\n  t[i, u: 1] = sum(q: " + std::to_string(groups) + ") p[i, q]\n";
      }
      text += std::vector<std::string>{
          "  y[i, u] = gelu(t[i, u]) + x[i, 0]\n",
          "  mx[i] = max(u: 1) t[i, u]\n  e[i] = sum(u: 1) exp(t[i, u] - mx[i])\n  y[i, u] = log(e[i]) + mx[i]\n",
          "  y[i, u] = sum(v: 1) t[i, v] - t[i, u] + 1.0\n"}[pick(3)];
      text += "}\n";
      break;
    }
    case 1:
    case 2: {  // a convolution, plain or transposed, under a global or windowed average
      const bool transposed = pick(2), window = pick(2);
      const int n = size(1, 2), c = size(1, 3), o = size(1, 3), kk = transposed ? size(2, 4) : size(1, 3),
                h = size(kk + 1, 6);
      const int stride = transposed ? size(1, 3) : 1, pad = transposed ? pick(std::min(kk, 2)) : 0;
      // The stride test as the importer writes it, or with its sides swapped (stride_phases' other sign).
      const std::string test_h = pick(2) ? "(oh + P - kh) % S == 0" : "(kh - oh - P) % S == 0";
      const std::string sizes = "N = " + std::to_string(n) + ", C = " + std::to_string(c) +
                                ", O = " + std::to_string(o) + ", H = " + std::to_string(h) +
                                ", K = " + std::to_string(kk) + ", S = " + std::to_string(stride) +
                                ", P = " + std::to_string(pad);
      const std::string out_h = transposed ? "(H - 1) * S - 2 * P + K" : "H - K + 1";
      const std::string body = transposed ? "select(" + test_h +
                                                " && (ow + P - kw) % S == 0, x[n, c, (oh + P - kh) / S, (ow + P - "
                                                "kw) / S] else 0.0, 0.0) * w[c, o, kh, kw]"
                                          : "x[n, c, oh + kh, ow + kw] * w[o, c, kh, kw]";
      text = "kernel c(x: f32[N, C, H, H], w: " + std::string(transposed ? "f32[C, O, K, K]" : "f32[O, C, K, K]") +
             ", b: f32[O]) -> y: f32[N, O" + (window ? ", (" + out_h + ") / 2, (" + out_h + ") / 2" : std::string()) +
             "] where " + sizes + " {\n  t[n, o, oh: " + out_h + ", ow: " + out_h + "] = sum(c, kh, kw) " + body +
             "\n  s[n, o, oh, ow] = (t[n, o, oh, ow] + b[o]) * " + scale + "\n";
      text += window ? "  y[n, o, p, q] = sum(i: 2, j: 2) s[n, o, 2 * p + i, 2 * q + j] / 4.0\n"
                     : "  y[n, o] = sum(p: " + out_h + ", q: " + out_h + ") s[n, o, p, q] / (" + out_h + ") / (" +
                           out_h + ")\n";
      text += "}\n";
      break;
    }
    case 3: {  // a masked running total, written one of the ways
      const std::vector<std::string> masks = {"select(k <= i, x[b, k], 0.0)",       "select(i >= k, x[b, k], 0.0)",
                                              "select(k < i, x[b, k], 0.0)",        "select(k > i, 0.0, x[b, k])",
                                              "x[b, k] * select(k <= i, 1.0, 0.0)", "select(k >= i, x[b, k], 0.0)",
                                              "select(!(k <= i), x[b, k], 0.0)",    "select(i < k, x[b, k], 0.0)"};
      const std::string op = std::vector<std::string>{"sum", "sum", "max"}[pick(3)];
      std::string mask = masks[pick(static_cast<int>(masks.size()))];
      if (op == "max") mask = std::string(mask).replace(mask.rfind("0.0"), 3, "-inf");
      if (mask.find(" * ") != std::string::npos && op == "max") mask = "select(k <= i, x[b, k], -inf)";
      text = "kernel r(x: f32[B, N]) -> y: f32[B, N] where B = " + std::to_string(size(1, 3)) +
             ", N = " + std::to_string(size(2, 9)) + " {\n  y[b, i] = " + op + "(k: N) " + mask + "\n}\n";
      break;
    }
    case 4: {  // a softmax's statistics (online_softmax), read as a softmax, a log-softmax or a loss
      const std::string value = std::vector<std::string>{"x[n, d]", "x[n, d] * " + scale, "x[n, d] + b[d]"}[pick(3)];
      const bool through = pick(2) == 1;
      text = "kernel s(x: f32[N, D], b: f32[D]) -> y: f32[N, D] where N = " + std::to_string(size(1, 4)) +
             ", D = " + std::to_string(size(2, 7)) + " {\n  m[n] = max(d) " + value + "\n";
      text += through ? "  e[n, d] = exp(" + value + " - m[n])\n  t[n] = sum(d) e[n, d]\n"
                      : "  t[n] = sum(d) exp(" + value + " - m[n])\n";
      const std::string numerator = through ? "e[n, d]" : "exp(" + value + " - m[n])";
      text += std::vector<std::string>{"  y[n, d] = " + numerator + " / t[n]\n",
                                       "  y[n, d] = " + value + " - m[n] - log(t[n])\n",
                                       "  y[n, d] = (log(t[n]) + m[n]) * b[d]\n",
                                       "  y[n, d] = " + numerator + " + t[n]\n"}[pick(4)] +
              "}\n";
      break;
    }
    case 5: {  // attention (online_attention): scores, maybe masked, their softmax, a weighted sum
      const std::string score = pick(2) ? "s[i, j]" : "select(j <= i, s[i, j], -inf)";
      const std::string value = std::vector<std::string>{"v[j, e]", "v[j, e] * " + scale, "(v[j, e] + b[e])"}[pick(3)];
      text = "kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, E], b: f32[E]) -> y: f32[T, E] where T = " +
             std::to_string(size(1, 6)) + ", D = " + std::to_string(size(1, 4)) +
             ", E = " + std::to_string(size(1, 4)) + " {\n  s[i, j] = sum(d) q[i, d] * k[j, d] * " + scale +
             "\n  z[i, j] = " + score +
             "\n  m[i] = max(j) z[i, j]\n  p[i, j] = exp(z[i, j] - m[i])\n"
             "  t[i] = sum(j) p[i, j]\n";
      text += pick(2) ? "  y[i, e] = sum(j) p[i, j] / t[i] * " + value + "\n}\n"
                      : "  w[i, j] = p[i, j] / t[i]\n  y[i, e] = sum(j) " + value + " * w[i, j]\n}\n";
      break;
    }
    default: {  // constants, copies and a duplicated stage
      text = "kernel d(x: f32[N, D]) -> y: f32[N, D] where N = " + std::to_string(size(1, 4)) +
             ", D = " + std::to_string(size(1, 5)) +
             " {\n  one[n: N] = exp(0.0) * 2.0 - 1.0\n  s1[n] = sum(d) x[n, d] * x[n, d]\n"
             "  s2[i] = sum(j) x[i, j] * x[i, j]\n  c[n] = s2[n]\n"
             "  y[n, d] = x[n, d] * one[n] / (s1[n] + c[n] + 1.0) + " +
             scale + " * 0.0\n}\n";
    }
  }
  return text;
}

namespace {

// Draws of the generator: n choices, a size in [lo, hi], a constant as written.
struct Draw {
  std::mt19937 &rng;
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
  int size(int lo, int hi) { return lo + pick(hi - lo + 1); }
  template <typename T>
  const T &one_of(const std::vector<T> &items) {
    return items[static_cast<size_t>(pick(static_cast<int>(items.size())))];
  }
  std::string constant() { return one_of<std::string>({"0.5", "2.0", "-1.25", "3.0", "0.1"}); }

  // A float expression of depth at most `depth` over the leaves, finite for inputs of
  // magnitude up to 16: exponentials only of bounded values, divisions by at least 1.
  std::string expression(const std::vector<std::string> &leaves, int depth) {
    if (depth == 0 || pick(4) == 0) return pick(6) ? one_of(leaves) : constant();
    const std::string a = expression(leaves, depth - 1), b = expression(leaves, depth - 1);
    switch (pick(14)) {
      case 0: return "(" + a + " + " + b + ")";
      case 1: return "(" + a + " - " + b + ")";
      case 2: return "(" + a + " * " + b + ")";
      case 3: return "(" + a + " / (abs(" + b + ") + 1.0))";
      case 4: return "max(" + a + ", " + b + ")";
      case 5: return "min(" + a + ", " + b + ")";
      case 6: return "select(" + a + " > " + b + ", " + a + ", " + b + " * 0.5)";
      case 7: return "exp(tanh(" + a + "))";
      case 8: return "sigmoid(" + a + ")";
      case 9: return "relu(" + a + ")";
      case 10: return "sqrt(abs(" + a + ") + 1.0)";
      case 11: return "log(abs(" + a + ") + 1.0)";
      case 12: return "gelu(" + a + ")";
      default: return "(" + a + " * " + constant() + ")";
    }
  }
};

// Elementwise chains with broadcasting: a temporary, then the output from it.
std::string elementwise(Draw &d) {
  const bool three = d.pick(2);
  const std::string idx = three ? "i, j, l" : "i, j";
  const std::vector<std::string> leaves = three ? std::vector<std::string>{"x[i, j, l]", "y[l]", "z[i, 0, l]"}
                                                : std::vector<std::string>{"x[i, j]", "y[j]", "z[i, j]"};
  std::string text = three
                         ? "kernel e(x: f32[A, B, C], y: f32[C], z: f32[A, 1, C]) -> out: f32[A, B, C]\n  where A = " +
                               std::to_string(d.size(1, 4)) + ", B = " + std::to_string(d.size(1, 5)) +
                               ", C = " + std::to_string(d.size(1, 9)) + "\n{\n"
                         : "kernel e(x: f32[A, B], y: f32[B], z: f32[A, B]) -> out: f32[A, B]\n  where A = " +
                               std::to_string(d.size(1, 6)) + ", B = " + std::to_string(d.size(1, 11)) + "\n{\n";
  // The first leaf names every index, so that each one's extent is known.
  text += "  t[" + idx + "] = " + leaves[0] + " * " + d.constant() + " + " + d.expression(leaves, 3) + "\n";
  std::vector<std::string> with_t = leaves;
  with_t.push_back("t[" + idx + "]");
  text += "  out[" + idx + "] = " + d.expression(with_t, 2) + " + t[" + idx + "]\n}\n";
  return text;
}

// A reduction of one kind over one or two axes, read back by the elements it reduced.
std::string reduction(Draw &d) {
  const std::string op = d.one_of<std::string>({"sum", "max", "min", "prod", "logsumexp", "argmax", "argmin"});
  const bool two = d.pick(3) == 0, ties = d.pick(3) == 0;
  const std::string over = two ? "j: B, l: C" : "j: B", at = two ? "x[i, j, l]" : "x[i, j]";
  // prod: factors near 1, so that a thousand of them stay finite; ties: many zeros.
  const std::string term = op == "prod" ? "(1.0 + " + at + " / 1024.0)"
                           : ties       ? "relu(" + at + " - 4.0)"
                                        : d.expression({at, "w[i]"}, 1);
  std::string text = std::string("kernel r(x: f32[A, B") + (two ? ", C" : "") + "], w: f32[A]) -> (y: f32[A, B" +
                     (two ? ", C" : "") + "], ";
  const bool arg = op == "argmax" || op == "argmin";
  text += std::string(arg ? "k: i64[A]" : "s: f32[A]") + ")\n  where A = " + std::to_string(d.size(1, 5)) +
          ", B = " + std::to_string(d.size(1, 12)) + (two ? ", C = " + std::to_string(d.size(1, 4)) : "") + "\n{\n";
  const std::string out = arg ? "k" : "s";
  text += "  " + out + "[i] = " + op + "(" + over + ") " + term + "\n";
  const std::string y_idx = two ? "i, j, l" : "i, j";
  if (arg)
    text += "  y[" + y_idx + "] = " + at + " * 2.0\n}\n";
  else
    text += "  y[" + y_idx + "] = " +
            d.one_of<std::string>({at + " - s[i]", at + " / (abs(s[i]) + 1.0)", "exp(tanh(" + at + " - s[i]))"}) +
            "\n}\n";
  return text;
}

// A matrix product, batched or not, either operand transposed, and an epilogue.
std::string contraction(Draw &d) {
  const bool batched = d.pick(3) == 0, a_t = d.pick(2), b_t = d.pick(2);
  const std::string bt = batched ? "B, " : "", bi = batched ? "z, " : "";
  const std::string a_shape = a_t ? "K, M" : "M, K", b_shape = b_t ? "N, K" : "K, N";
  const std::string a_at = a_t ? "k, i" : "i, k", b_at = b_t ? "j, k" : "k, j";
  std::string text = "kernel m(a: f32[" + bt + a_shape + "], b: f32[" + bt + b_shape + "], bias: f32[N]) -> c: f32[" +
                     bt + "M, N]\n  where " + (batched ? "B = " + std::to_string(d.size(1, 3)) + ", " : "") +
                     "M = " + std::to_string(d.size(1, 9)) + ", N = " + std::to_string(d.size(1, 9)) +
                     ", K = " + std::to_string(d.size(1, 9)) + "\n{\n";
  text += "  acc[" + bi + "i, j] = sum(k) a[" + bi + a_at + "] * b[" + bi + b_at + "]\n";
  text += "  c[" + bi + "i, j] = " +
          d.one_of<std::string>({"acc[" + bi + "i, j]", "acc[" + bi + "i, j] + bias[j]",
                                 "leaky_relu((acc[" + bi + "i, j] + bias[j]) * 2.0, 0.1)",
                                 "gelu(acc[" + bi + "i, j]) * bias[j]"}) +
          "\n}\n";
  return text;
}

// A window: a convolution (stride, dilation, padding read as zero) or a pool.
std::string window(Draw &d) {
  const std::string sizes = "N = " + std::to_string(d.size(1, 2)) + ", C = " + std::to_string(d.size(1, 3)) +
                            ", H = " + std::to_string(d.size(5, 9)) + ", W = " + std::to_string(d.size(5, 9)) +
                            ", K = " + std::to_string(d.size(1, 3)) + ", S = " + std::to_string(d.size(1, 2)) +
                            ", P = " + std::to_string(d.pick(2)) + ", DIL = " + std::to_string(d.size(1, 2));
  const std::string out_h = "(H + 2 * P - DIL * (K - 1) - 1) / S + 1",
                    out_w = "(W + 2 * P - DIL * (K - 1) - 1) / S + 1";
  const std::string at = "x[n, c, oh * S + kh * DIL - P, ow * S + kw * DIL - P]";
  switch (d.pick(3)) {
    case 0:
      return "kernel conv(x: f32[N, C, H, W], w: f32[O, C, K, K]) -> y: f32[N, O, " + out_h + ", " + out_w +
             "]\n  where " + sizes + ", O = " + std::to_string(d.size(1, 3)) +
             "\n{\n  y[n, o, oh, ow] = sum(c, kh, kw) (" + at + " else 0.0) * w[o, c, kh, kw]\n}\n";
    case 1:
      return "kernel pool(x: f32[N, C, H, W]) -> y: f32[N, C, " + out_h + ", " + out_w + "]\n  where " + sizes +
             "\n{\n  y[n, c, oh, ow] = max(kh: K, kw: K) " + at + " else -inf\n}\n";
    default:
      return "kernel pool(x: f32[N, C, H, W]) -> y: f32[N, C, " + out_h + ", " + out_w + "]\n  where " + sizes +
             "\n{\n  y[n, c, oh, ow] = sum(kh: K, kw: K) (" + at + " else 0.0) / (K * K)\n}\n";
  }
}

// A running total, forward or reversed, inclusive or exclusive, of a sum, max or prod.
std::string running_total(Draw &d) {
  const std::string range = d.one_of<std::string>({"k: 0..i + 1", "k: 0..i", "k: i..N", "k: i + 1..N"});
  const std::string op = d.one_of<std::string>({"sum", "sum", "max", "prod"});
  const std::string term = op == "prod" ? "(1.0 + x[b, k] / 1024.0)" : "x[b, k]";
  // An empty range (an exclusive total's first position) is the reduction's identity.
  return "kernel run(x: f32[B, N]) -> y: f32[B, N]\n  where B = " + std::to_string(d.size(1, 3)) +
         ", N = " + std::to_string(d.size(2, 17)) + "\n{\n  y[b, i] = " + op + "(" + range + ") " + term + "\n}\n";
}

// Rows gathered through an integer input, then summed.
std::string gather(Draw &d) {
  return "kernel g(x: f32[M, D], idx: i32[N] in 0..M) -> (y: f32[N, D], s: f32[N])\n  where M = " +
         std::to_string(d.size(1, 7)) + ", N = " + std::to_string(d.size(1, 7)) +
         ", D = " + std::to_string(d.size(1, 9)) + "\n{\n  y[i, d] = x[idx[i], d] * " + d.constant() +
         "\n  s[i] = sum(d) y[i, d] * x[idx[i], d]\n}\n";
}

}  // namespace

std::string random_spec(std::mt19937 &rng) {
  Draw d{rng};
  switch (d.pick(8)) {
    case 0: return elementwise(d);
    case 1: return reduction(d);
    case 2: return contraction(d);
    case 3: return window(d);
    case 4: return running_total(d);
    case 5: return gather(d);
    default: return rewrite_pattern_spec(rng);
  }
}

}  // namespace ks
