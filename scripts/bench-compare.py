# Summarises bench-compare.sh output: per metric, the rounds of the old and
# the new binary, their medians and the new/old ratio, as a Markdown table.
import re,glob,statistics,sys
d=sys.argv[1]
metrics={}
for f in sorted(glob.glob(d+'/*.txt')):
    v,r,_=f.split('/')[-1].split('.')
    for line in open(f):
        # Sub-benchmarks too: BenchmarkRetrieval/chunks=100000-2.
        m=re.match(r'^(Benchmark[\w/=.,]+)-\d+\s+\d+\s+\d+ ns/op\s+(.*)$',line)
        if not m: continue
        name=m.group(1).replace('Benchmark','')
        parts=m.group(2).split()
        for i in range(0,len(parts)-1,2):
            metrics.setdefault((name,parts[i+1]),{}).setdefault(v,{})[int(r)]=float(parts[i])
keys=[('ChatFirstToken','p50-ms/1-streams'),('ChatFirstToken','p99-ms/1-streams'),('ChatFirstToken','p50-ms/100-streams'),('ChatFirstToken','p99-ms/100-streams'),
 ('ChatThroughput','chats/s'),('ChatThroughput','%-of-baseline'),('ConversationList','req/s'),('ConversationList','%-of-baseline'),('ConversationList','p99-ms'),
 ('Relay','relay-p50-ms'),('Relay','relay-p99-ms'),('Relay','heap-KiB/stream'),('Relay','rss-KiB/stream')]
# The known metrics in their usual order, then any other benchmark's.
keys+=sorted(k for k in metrics if k not in keys)
print('| benchmark | metric | old rounds | old median | new rounds | new median | new/old |')
print('|---|---|---|---|---|---|---|')
for k in keys:
    if k not in metrics: continue
    o=metrics[k].get('old',{}); n=metrics[k].get('new',{})
    os_=[o[i] for i in sorted(o)]; ns=[n[i] for i in sorted(n)]
    if not os_ or not ns: continue
    mo,mn=statistics.median(os_),statistics.median(ns)
    fmt=lambda xs: ' / '.join(('%.0f' if x>=100 else '%.2f')%x for x in xs)
    print(f'| {k[0]} | {k[1]} | {fmt(os_)} | {fmt([mo])} | {fmt(ns)} | {fmt([mn])} | {mn/mo:.2f} |')
