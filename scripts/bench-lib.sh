# Helpers the bench scripts share; sourced, not run.

# cputime runs a command, prints its output, then "CPU <user+sys seconds>" of it and its children.
cputime() { /usr/bin/env python3 - "$@" <<'PY'
import os, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write(p.stdout)
sys.stdout.write("CPU %.3f\n" % (r.ru_utime + r.ru_stime))
sys.exit(p.returncode)
PY
}

# median_range prints the median, the smallest and the largest of its arguments.
median_range() { python3 -c "import sys; r=sorted(map(float, sys.argv[1:])); print(r[len(r)//2], r[0], r[-1])" "$@"; }
