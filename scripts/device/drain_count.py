"""Independent drain of the driver's buffered power samples (NVML
TOTAL_POWER_SAMPLES, read with the last-seen timestamp every 200 ms against
the ~2.4 s ring) until the file named by argv[2] exists; writes each GPU's
sample timestamps (µs, the driver's own) and values (mW) as JSON to argv[1].
Nothing here changes a GPU setting."""
import sys, os, time, json
import pynvml as N

out, stop = sys.argv[1], sys.argv[2]
N.nvmlInit()
handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]
uuids = [N.nvmlDeviceGetUUID(h) for h in handles]
last = [0] * len(handles)
seen = [[] for _ in handles]
vals = [[] for _ in handles]
polls = 0
while not os.path.exists(stop):
    for i, h in enumerate(handles):
        try:
            _, samples = N.nvmlDeviceGetSamples(h, N.NVML_TOTAL_POWER_SAMPLES, last[i])
        except N.NVMLError_NotFound:
            continue
        for s in samples:
            if s.timeStamp > last[i]:
                seen[i].append(s.timeStamp)
                vals[i].append(s.sampleValue.uiVal)
        if samples:
            last[i] = max(last[i], max(s.timeStamp for s in samples))
    polls += 1
    time.sleep(0.2)
json.dump({"uuids": uuids, "polls": polls, "ts_us": seen, "value_mw": vals}, open(out, "w"))
print(f"drain: {polls} polls, " + ", ".join(f"GPU {i}: {len(v)} samples" for i, v in enumerate(seen)))
