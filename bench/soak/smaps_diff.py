#!/usr/bin/env python3
"""Which mappings' resident memory changed between two /proc/PID/smaps copies (soak_program's
SOAK_PROC_DIR files): prints kB of Rss, Anonymous and Private_Dirty per mapping that changed, and the
VmRSS/RssAnon/RssFile/VmPTE change from the matching status copies when they are there. A copy of smaps
is a walk the kernel may pause and resume while other threads change the mappings (Sentinel's do): use
it to find which mapping grew; the totals to trust are status's (VmRSS).

    bench/soak/smaps_diff.py DIR FIRST_STEP LAST_STEP
"""
import os
import sys


def read_smaps(path):
    mappings, current = {}, None
    with open(path) as f:
        for line in f:
            fields = line.split()
            if '-' in fields[0] and ':' not in fields[0]:
                name = fields[5] if len(fields) > 5 else '[anon]'
                current = (fields[0], name)
                mappings[current] = {}
            elif fields[0].endswith(':') and len(fields) >= 2 and fields[1].isdigit():
                mappings[current][fields[0][:-1]] = int(fields[1])
    return mappings


def read_status(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(':')
                if value.strip().endswith('kB'):
                    out[key] = int(value.split()[0])
    return out


def main():
    directory, first, last = sys.argv[1], sys.argv[2], sys.argv[3]
    a = read_smaps(os.path.join(directory, f'{first}.smaps'))
    b = read_smaps(os.path.join(directory, f'{last}.smaps'))
    keys = ('Rss', 'Anonymous', 'Private_Dirty', 'AnonHugePages')
    print(f'mappings: {len(a)} -> {len(b)}')
    for m in sorted(set(a) | set(b)):
        da = a.get(m, {})
        db = b.get(m, {})
        deltas = {k: db.get(k, 0) - da.get(k, 0) for k in keys}
        if any(deltas.values()):
            state = '' if m in a and m in b else (' (new)' if m in b else ' (gone)')
            print(f'{m[0]} {m[1]}{state}: ' + ' '.join(f'{k} {da.get(k, 0)}->{db.get(k, 0)} ({v:+d})'
                                                       for k, v in deltas.items() if da.get(k) or db.get(k)))
    sa = read_status(os.path.join(directory, f'{first}.status'))
    sb = read_status(os.path.join(directory, f'{last}.status'))
    for k in ('VmRSS', 'RssAnon', 'RssFile', 'RssShmem', 'VmPTE', 'VmData'):
        if k in sa and k in sb:
            print(f'{k}: {sa[k]} -> {sb[k]} kB ({sb[k] - sa[k]:+d})')


if __name__ == '__main__':
    main()
