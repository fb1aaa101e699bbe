source <(sed -n '/^set -uo pipefail/,/tee "$out\/device.txt"/p' scripts/dev/gpu_round14.sh)
for tree in .old .; do
  name=$([[ $tree == .old ]] && echo before || echo after)
  [[ $tree != . ]] && cp scripts/dev/crt_products_rate.py "$tree/scripts/dev/"
  (cd "$tree" && PYTHONPATH="$PWD${site:+:$site}" timeout 100 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy -k regex:'^crt_products$' --launch-skip 2 --launch-count 1 python3 scripts/dev/crt_products_rate.py --rows 8192 --cols 1024 --padded 1024 --repeats 1 --batch 1) > "$out/ncu_$name.txt" 2>&1
  grep -E "Duration|Issue Slots Busy|Executed Instructions  |Eligible Warps|Active Warps Per|Warp Cycles Per Issued|DRAM Throughput|Registers Per|No Eligible" "$out/ncu_$name.txt" | sed "s/^/$name /"
done
