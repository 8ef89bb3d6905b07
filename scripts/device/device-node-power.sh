#!/usr/bin/env bash
# Issue 16 on a lent GPU machine: is there a BMC to read (IPMI device,
# Redfish host interface)? Then the node power join on real GPUs with a
# command source (campaigns/device-node-power.toml). Logs under $OUT.
#   usage: scripts/device/device-node-power.sh [path/to/powerlab]
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
BIN=${1:-.device/powerlab}
log() { echo "=== $*" | tee -a "$OUT/node-power.txt"; }
if [ -f "$BIN.gz" ] && [ ! -x "$BIN" ]; then gunzip -k "$BIN.gz"; chmod +x "$BIN"; fi
log "machine"
nvidia-smi --query-gpu=index,name,power.draw,power.draw.average,power.draw.instant,enforced.power.limit --format=csv 2>&1 | tee -a "$OUT/node-power.txt"
"$BIN" --version | tee -a "$OUT/node-power.txt"
log "a BMC to read?"
{
  echo "ipmi devices: $(ls /dev/ipmi* /dev/ipmidev* 2>/dev/null || echo none)"
  echo "/sys/class/ipmi: $(ls /sys/class/ipmi 2>/dev/null || echo absent)"
  echo "ipmitool: $(command -v ipmitool || echo 'not installed')"
  echo "ipmi modules: $(grep -E '^ipmi' /proc/modules 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ' || true)"
  echo "DMI system: $(cat /sys/class/dmi/id/sys_vendor 2>/dev/null) $(cat /sys/class/dmi/id/product_name 2>/dev/null)"
  echo "SMBIOS type 38 (IPMI device) tables: $(ls /sys/firmware/dmi/entries 2>/dev/null | grep -c '^38-' || echo 0)"
  echo "SMBIOS type 42 (Redfish host interface) tables: $(ls /sys/firmware/dmi/entries 2>/dev/null | grep -c '^42-' || echo 0)"
  echo "network interfaces: $(ip -br addr 2>/dev/null | tr '\n' ';')"
} 2>&1 | tee -a "$OUT/node-power.txt"
log "preflight --campaign (the command source read once)"
"$BIN" preflight --allow-programs --campaign campaigns/device-node-power.toml --out "$OUT" 2>&1 | tail -4 | tee -a "$OUT/node-power.txt"
log "run campaigns/device-node-power.toml"
"$BIN" run campaigns/device-node-power.toml --allow-programs --results "$OUT/runs" > "$OUT/node-power-run.log" 2>&1; echo "run exit $?" | tee -a "$OUT/node-power.txt"
tail -12 "$OUT/node-power-run.log" | tee -a "$OUT/node-power.txt"
d=$(ls -d "$OUT"/runs/*/ | head -1)
for f in node_power_sources.csv node_power.csv; do
  echo "--- report/$f" | tee -a "$OUT/node-power.txt"
  cat "$d/report/$f" | tee -a "$OUT/node-power.txt"
done
# One file comes back (the raw Parquet copies and the PNG plots stay there).
rm -rf "$d/report/raw" "$d"/report/plots/*.png
tar czf "$OUT/node-power-run.tgz" -C "$OUT/runs" "$(basename "$d")" && rm -rf "$OUT/runs"
ls -la "$OUT" | tee -a "$OUT/node-power.txt"
