#!/usr/bin/env python3
"""The BMC side of the Redfish tests: writes a Redfish mockup tree for
`sushy-static` (the sushy-tools emulator that serves a directory of
Redfish JSON) and keeps its chassis power reading up to date.

The reading plays a BMC's sensor: the GPUs' buffered power from the raw
files of the run being written under --results, summed, averaged over the
last --window-s seconds, plus --base-w for the rest of the node (CPUs,
fans, NICs, conversion losses), published every --update-s seconds, and
split evenly over --supplies power supplies. Without a run (or with
--results unset) it publishes --base-w alone.

Each update replaces Power/index.json atomically (write, then rename), so
the emulator never serves half a file. Stops on SIGTERM.
"""
import argparse
import glob
import json
import os
import signal
import sys
import time


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def mockup(root, chassis, schema):
    # sushy-static serves /redfish/v1/<path> from <root>/<path>/index.json.
    v1 = root
    write_json(os.path.join(v1, "index.json"), {
        "@odata.id": "/redfish/v1",
        "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
        "Id": "RootService",
        "Name": "Test BMC",
        "RedfishVersion": "1.6.0",
        "Chassis": {"@odata.id": "/redfish/v1/Chassis"},
    })
    write_json(os.path.join(v1, "Chassis", "index.json"), {
        "@odata.id": "/redfish/v1/Chassis",
        "@odata.type": "#ChassisCollection.ChassisCollection",
        "Name": "Chassis Collection",
        "Members@odata.count": 2,
        "Members": [
            {"@odata.id": "/redfish/v1/Chassis/Backplane"},
            {"@odata.id": f"/redfish/v1/Chassis/{chassis}"},
        ],
    })
    # A chassis without power telemetry first: discovery must skip it.
    write_json(os.path.join(v1, "Chassis", "Backplane", "index.json"), {
        "@odata.id": "/redfish/v1/Chassis/Backplane",
        "@odata.type": "#Chassis.v1_14_0.Chassis",
        "Id": "Backplane",
        "Name": "Drive backplane",
        "ChassisType": "StorageEnclosure",
    })
    # The chassis power in one of the three places Redfish puts it: the
    # legacy Power resource, EnvironmentMetrics (2020.4), or a power Sensor.
    link = {"legacy": "Power", "environment": "EnvironmentMetrics", "sensors": "Sensors"}[schema]
    write_json(os.path.join(v1, "Chassis", chassis, "index.json"), {
        "@odata.id": f"/redfish/v1/Chassis/{chassis}",
        "@odata.type": "#Chassis.v1_14_0.Chassis",
        "Id": chassis,
        "Name": "GPU server chassis",
        "ChassisType": "RackMount",
        link: {"@odata.id": f"/redfish/v1/Chassis/{chassis}/{link}"},
    })
    if schema == "sensors":
        base = f"/redfish/v1/Chassis/{chassis}/Sensors"
        write_json(os.path.join(v1, "Chassis", chassis, "Sensors", "index.json"), {
            "@odata.id": base,
            "@odata.type": "#SensorCollection.SensorCollection",
            "Members": [{"@odata.id": f"{base}/Inlet"}, {"@odata.id": f"{base}/PSU1Power"},
                        {"@odata.id": f"{base}/ChassisPower"}],
        })
        write_json(os.path.join(v1, "Chassis", chassis, "Sensors", "Inlet", "index.json"), {
            "@odata.id": f"{base}/Inlet", "@odata.type": "#Sensor.v1_7_0.Sensor", "Id": "Inlet",
            "ReadingType": "Temperature", "Reading": 24.0, "PhysicalContext": "Intake",
        })
        write_json(os.path.join(v1, "Chassis", chassis, "Sensors", "PSU1Power", "index.json"), {
            "@odata.id": f"{base}/PSU1Power", "@odata.type": "#Sensor.v1_7_0.Sensor", "Id": "PSU1Power",
            "ReadingType": "Power", "Reading": 1.0, "PhysicalContext": "PowerSupply",
        })
        return os.path.join(v1, "Chassis", chassis, "Sensors", "ChassisPower", "index.json")
    return os.path.join(v1, "Chassis", chassis, link, "index.json")


def power_doc(chassis, watts, supplies, schema="legacy"):
    if schema == "environment":
        return {
            "@odata.id": f"/redfish/v1/Chassis/{chassis}/EnvironmentMetrics",
            "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
            "Id": "EnvironmentMetrics",
            "PowerWatts": {"DataSourceUri": f"/redfish/v1/Chassis/{chassis}/Sensors/ChassisPower",
                           "Reading": round(watts, 1)},
        }
    if schema == "sensors":
        return {
            "@odata.id": f"/redfish/v1/Chassis/{chassis}/Sensors/ChassisPower",
            "@odata.type": "#Sensor.v1_7_0.Sensor",
            "Id": "ChassisPower",
            "ReadingType": "Power",
            "PhysicalContext": "Chassis",
            "Reading": round(watts, 1),
        }
    return {
        "@odata.id": f"/redfish/v1/Chassis/{chassis}/Power",
        "@odata.type": "#Power.v1_7_0.Power",
        "Id": "Power",
        "Name": "Power",
        "PowerControl": [{
            "@odata.id": f"/redfish/v1/Chassis/{chassis}/Power#/PowerControl/0",
            "MemberId": "0",
            "Name": "Chassis power",
            "PowerConsumedWatts": round(watts, 1),
        }],
        "PowerSupplies": [{
            "@odata.id": f"/redfish/v1/Chassis/{chassis}/Power#/PowerSupplies/{i}",
            "MemberId": str(i),
            "Name": f"PSU{i + 1}",
            "PowerInputWatts": round(watts / supplies, 1),
        } for i in range(supplies)],
    }


class Tail:
    """Reads the rows appended to one raw file since the last call."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.rest = ""

    def rows(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except OSError:
            return []
        text = self.rest + data
        lines = text.split("\n")
        self.rest = lines.pop()
        out = []
        for line in lines:
            parts = line.split(",")
            if len(parts) == 5 and parts[3] == "buffered_w":
                try:
                    out.append((int(parts[0]), float(parts[4])))
                except ValueError:
                    pass
        return out


def newest_run(results):
    runs = [d for d in glob.glob(os.path.join(results, "*")) if os.path.isdir(os.path.join(d, "raw"))]
    return max(runs, key=os.path.getmtime) if runs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mockup", required=True)
    ap.add_argument("--chassis", default="1U")
    ap.add_argument("--results")
    ap.add_argument("--base-w", type=float, default=900.0)
    ap.add_argument("--window-s", type=float, default=1.0)
    ap.add_argument("--update-s", type=float, default=0.5)
    ap.add_argument("--supplies", type=int, default=2)
    ap.add_argument("--schema", choices=["legacy", "environment", "sensors"], default="legacy")
    a = ap.parse_args()
    path = mockup(a.mockup, a.chassis, a.schema)
    write_json(path, power_doc(a.chassis, a.base_w, a.supplies, a.schema))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run, tails, series = None, {}, {}
    while True:
        time.sleep(a.update_s)
        if not a.results:
            continue
        r = newest_run(a.results)
        if r != run:
            run, tails, series = r, {}, {}
        if run is None:
            continue
        for f in glob.glob(os.path.join(run, "raw", "*.csv")):
            t = tails.setdefault(f, Tail(f))
            series.setdefault(f, []).extend(t.rows())
        now_ns = time.time_ns()
        start = now_ns - int(a.window_s * 1e9)
        total = a.base_w
        for f, s in series.items():
            s[:] = [p for p in s if p[0] >= start - int(5e9)]
            win = [w for ts, w in s if start <= ts <= now_ns]
            if win:
                total += sum(win) / len(win)
        write_json(path, power_doc(a.chassis, total, a.supplies, a.schema))


if __name__ == "__main__":
    main()
