"""python_site.py PREFIX - print, relative to PREFIX, the folder where this
Python (run it as Debian's /usr/bin/python3) finds packages installed
under PREFIX: the shortest of its search folders that lies in PREFIX, its
user site included (~/.local). None does (a private prefix): print
lib/python3/dist-packages, and say on stderr that PYTHONPATH must name it.

A versioned folder (python3.11) is left behind by an upgrade to another
Python; Debian's unversioned lib/python3/dist-packages is only on the path
for /usr, where Debian's own packages go.
"""
import os
import site
import sys

prefix = os.path.abspath(sys.argv[1])
found = [os.path.relpath(d, prefix) for d in sys.path + [site.getusersitepackages()]
         if d.endswith('-packages') and d.startswith(prefix.rstrip('/') + '/')]
if found:
    print(min(found, key=lambda d: d.count('/')))
else:
    print('lib/python3/dist-packages')
    print(f'{sys.executable} does not search {prefix}: dev servers need '
          f'PYTHONPATH={prefix}/lib/python3/dist-packages', file=sys.stderr)
