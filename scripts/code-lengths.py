#!/usr/bin/env python3
"""Function and file lengths in src/ (or the folder given), tests excluded: a file counts up to
its `#[cfg(test)] mod`, a function from its `fn` line to its closing brace. Prints the
functions over 80 lines, the files over 500 (a file named tests.rs is all tests) and the
runner's files over 400 — the goals of issues 23 and 52.

    python3 scripts/code-lengths.py [--max-functions N] [--max-files M] [src]

With the limits (as .ci/run gives them), it exits 1 when more functions are over 80 lines
than N, or more files over 500 than M: the lengths stay where they were put.
"""
import os, re, sys
args = sys.argv[1:]
limits = {}
while args and args[0].startswith('--max-'):
    limits[args[0]] = int(args[1]); args = args[2:]
root = args[0] if args else 'src'
def strip(s):
    # remove strings/chars/comments crudely for brace matching, keep newlines
    out=[];i=0;n=len(s)
    while i<n:
        c=s[i]
        if s.startswith('//',i):
            j=s.find('\n',i); j=n if j<0 else j; out.append(' '*(j-i)); i=j; continue
        if s.startswith('/*',i):
            j=s.find('*/',i)+2; out.append(re.sub(r'[^\n]',' ',s[i:j])); i=j; continue
        m=re.match(r'r(#*)"',s[i:i+10])
        if m and (i==0 or not (s[i-1].isalnum() or s[i-1]=='_')):
            end='"'+m.group(1); j=s.find(end,i+len(m.group(0)))+len(end)
            out.append(re.sub(r'[^\n]',' ',s[i:j])); i=j; continue
        if c=='"':
            j=i+1
            while s[j]!='"':
                j+= 2 if s[j]=='\\' else 1
            j+=1; out.append(re.sub(r'[^\n]',' ',s[i:j])); i=j; continue
        if c=="'":
            m=re.match(r"'(\\.[^']*|[^\\'])'",s[i:i+12])
            if m: out.append(' '*len(m.group(0))); i+=len(m.group(0)); continue
        out.append(c); i+=1
    return ''.join(out)
fns=[];files=[]
for d,_,fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p=os.path.join(d,f); s=open(p).read(); t=strip(s)
        lines=t.split('\n')
        # find cfg(test) mod start to cut
        cut=len(lines)
        for k,l in enumerate(lines):
            if re.match(r'\s*#\[cfg\(test\)\]',l) and k+1<len(lines) and re.match(r'\s*mod\s+\w+',lines[k+1]):
                cut=k;break
        files.append((cut,p))
        body='\n'.join(lines[:cut])
        for m in re.finditer(r'\bfn\s+(\w+)',body):
            start=body.count('\n',0,m.start())
            j=m.end(); depth=0; k=j
            # find first '{' or ';'
            while k<len(body) and body[k] not in '{;': k+=1
            if k>=len(body) or body[k]==';': continue
            depth=0
            while k<len(body):
                if body[k]=='{': depth+=1
                elif body[k]=='}':
                    depth-=1
                    if depth==0: break
                k+=1
            end=body.count('\n',0,k)
            fns.append((end-start+1,p,m.group(1),start+1))
fns.sort(reverse=True); files.sort(reverse=True)
long=[f for f in fns if f[0]>80]
print(f"functions > 80 lines: {len(long)}")
for f in long: print(f"  {f[0]:4} {f[1]}:{f[3]} {f[2]}")
big=[f for f in files if f[0]>500 and not f[1].endswith('tests.rs')]
print(f"files > 500 lines: {len(big)}")
for f in big: print(f"  {f[0]:5} {f[1]}")
print("runner files > 400:", [f for f in files if 'runner/' in f[1] and f[0]>400])
over = []
if len(long) > limits.get('--max-functions', len(long)):
    over.append(f"{len(long)} functions over 80 lines (at most {limits['--max-functions']})")
if len(big) > limits.get('--max-files', len(big)):
    over.append(f"{len(big)} files over 500 lines (at most {limits['--max-files']})")
if over:
    print("too long: " + "; ".join(over) + " — split by what the code does", file=sys.stderr)
    sys.exit(1)
