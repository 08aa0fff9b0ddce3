import re, sys
src, dst, radix = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = open(src).read()
pat = re.compile(r'    barrier\(CLK_LOCAL_MEM_FENCE\);\n    if \(t < (\d+)\) \{\n      (\w+)\[t\] = (.*?)\n    \}\n(?:.*?\n)*?    if \(t < 1\) \{\n.*?\n    \}\n')
def combine(expr_line, p, a, b):
    # expr_line like "P[t] + P[t + 128];" or "fmax(P[t], P[t + 128]);"
    if expr_line.startswith('fmax('): return 'fmax(%s, %s)' % (a, b)
    return '%s + %s' % (a, b)
def tree(m):
    p, e = m.group(2), m.group(3)
    out = ''
    n = 2 * int(m.group(1))
    while n > 1:
        k = min(radix, n)
        w = n // k
        out += '    barrier(CLK_LOCAL_MEM_FENCE);\n    if (t < %d) {\n      float s = %s[t];\n' % (w, p)
        out += '      for (int k = 1; k < %d; ++k) s = %s;\n' % (k, combine(e, p, 's', '%s[t + %d * k]' % (p, w)))
        out += '      %s[t] = s;\n    }\n' % p
        n = w
    return out
s2, count = pat.subn(tree, s)
print(count, file=sys.stderr)
open(dst, 'w').write(s2)
