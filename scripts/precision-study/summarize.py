"""Markdown tables from quality-*.jsonl and bench-*.json."""
import json, glob, collections
for net in ('x4plus', 'x4fast'):
    rows = [json.loads(l) for l in open(f'quality-{net}.jsonl')]
    by = collections.OrderedDict()
    for r in rows:
        by.setdefault(r['variant'], {})[r['image']] = r  # last run wins
    imgs = list(next(iter(by.values())).keys())
    print(f'\n#### {net} ({rows[0]["size"]} centre crops, output x4) — PSNR dB vs fp32 / mean dE76 / mean |diff| R,G,B (levels)\n')
    print('| variant | ' + ' | '.join(i.replace('.png', '') for i in imgs) + ' | min PSNR | mean dE76 | gate 40 dB |')
    print('|---|' + '---|' * (len(imgs) + 3))
    for v, d in by.items():
        cells = [f"{d[i]['psnr']:.1f} / {d[i]['mean_dE76']:.2f} / {','.join(f'{x:.1f}' for x in d[i]['mean_abs_rgb'])}" for i in imgs]
        mn = min(d[i]['psnr'] for i in imgs)
        de = sum(d[i]['mean_dE76'] for i in imgs) / len(imgs)
        print(f'| {v} | ' + ' | '.join(cells) + f' | {mn:.1f} | {de:.2f} | {"pass" if mn >= 40 else "FAIL"} |')
print('\n#### speed (onnxruntime-node 1.30.0, CPU EP, intraOpNumThreads 2, interleaved)\n')
print('| net | input | variant | runs | median ms | min ms | ratio median | ratio min | CPU-time median ms | CPU-time ratio | loadavg (1/5/15 min) |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for f in sorted(glob.glob('bench-*.json')):
    j = json.load(open(f))
    for r in j['results']:
        print(f"| {r['net']} | {r['input']} | {r['variant']} | {r['n']} | {r['median_ms']} | {r['min_ms']} | {r['speedup_median']} | {r['speedup_min']} | {r.get('cpu_median_ms', '-')} | {r.get('cpu_speedup_median', '-')} | {'/'.join(str(round(x, 1)) for x in j['loadavg'])} |")
