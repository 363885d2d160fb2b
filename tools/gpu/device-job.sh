#!/usr/bin/env bash
# On a CUDA host, after the GPU kit's device-setup.sh (../shared/gpu/README.md): the
# registry's whole spine on checkpoints large enough to measure, in priority order,
# within a time budget, so that whatever the lease allows comes back usable.
#
#   bash tools/gpu/device-job.sh [--detach]      # from the project clone (/root/project)
#   bash tools/gpu/device-job.sh --started       # exit 3 when no job ran on this machine
#
# One GPU:  build llama-3b, llama-3b-kv-fp8, hybrid-2b on the GPU (tools/sized_checkpoint.py);
#           run + seal the BF16, checkpoint-FP8 (auto) and explicit-FP8 lanes and the
#           sliding hybrid; diff BF16 against both FP8 lanes; make the BF16 record its
#           lane's teacher; client agreement (one engine, the registry's client and
#           vllm bench alternating, AGREEMENT_ROUNDS rounds); then reproductions of the
#           BF16 record until REPRODUCTIONS are done or the budget is spent.
# Two GPUs: the BF16 lane (GPU 0) and its batch-invariant twin (GPU 1) at once, each its
#           lane's teacher; REPRODUCTIONS of the BF16 record two at a time, one per GPU;
#           the TP=2 lane, diffed against BF16, and one reproduction of it; then two
#           reproductions of the batch-invariant record (does bitwise hold with them?).
#           With PLAN=followup instead: the checkpoint-FP8 (GPU 0) and explicit-FP8 (GPU 1)
#           lanes and a reproduction of each, the checkpoint-FP8 lane at TP=2, diffed and
#           reproduced, then EAGER_RUNS runs of the eager BF16 lane, two at a time (how many
#           distinct outputs do cold starts give without torch.compile?).
# PLAN=hybrid (any host): the sliding-window hybrid lane alone, run and sealed.
# PLAN=controlled (one GPU): CONTROL_RECIPE (default llama-3b-bf16-kv-cuda) sealed twice
#           with `run --starts SEALED_STARTS` (3), as the record and its control; then
#           REPRODUCTIONS controlled reproductions (`reproduce --control`, CONTROL_STARTS
#           starts of each, default 3: record, control, control, record, record,
#           control), the whole job sampled by nvidia-smi (logs/smi.csv).
#           (The eager lane is faster to start but bound by the host: docs/gpu.md.)
# PLAN=ab (one GPU): `registry ab` of AB_A against AB_B (default the BF16-KV and explicit
#           FP8-KV 3B lanes, same weights), --delta precision.kv_cache, AB_STARTS (3) starts
#           a side before the first look, then a pair at a time up to AB_MAX_STARTS
#           (default AB_STARTS) until decided; AB_REPEATS (1) such A/Bs while the budget
#           lasts, the sides swapped on each repeat (runs/ab, runs/ab-2, ...); the whole
#           job sampled by nvidia-smi (logs/smi.csv).
#           TRUST_PEM=FILE: the new home also trusts that public key as a signer, so a
#           later lease can go on with this home. RESUME=DIR (absolute): go on with an
#           earlier controlled job's home instead of sealing again: DIR holds the
#           home.tar.gz its collect packed, its logs/records.txt as records.txt, and
#           keys/ with the private key of the TRUST_PEM it trusted (docs/gpu.md).
# Then verify --all, list, show and resolve JSON, and logs/figures.txt: the engine's own
# capacity lines beside the registry's resolved fields. DONE is written last; collect
# with the kit's device-collect.sh (it packs logs/, runs/, .registry/, compare/).
#
# Variables: JOB_BUDGET_S (default 1260: the job's wall clock, setup excluded),
# LANES (one GPU; default "bf16 checkpoint-fp8 fp8 hybrid"; bf16 is always run),
# REPRODUCTIONS (10), AGREEMENT_ROUNDS (10; 0 skips it), PLAN (two GPUs: bf16 or followup; hybrid anywhere),
# EAGER_RUNS (8), CONTROL_RECIPE, SEALED_STARTS (3), CONTROL_STARTS (3), KIT_WORK (/root/work),
# KIT_SITE (/root/site).
set -uo pipefail
PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
W=${KIT_WORK:-/root/work}
if [ "${1:-}" = --started ]; then  # before a collect: is there a job on this machine?
  [ -f "$W/pipeline.log" ] && exit 0
  echo "no job here: the lease was lost, this machine is new"; exit 3
fi
if [ "${1:-}" = --detach ]; then
  mkdir -p "$W"
  setsid nohup bash "$PROJECT/tools/gpu/device-job.sh" > "$W/pipeline.log" 2>&1 < /dev/null &
  echo "device-job.sh detached (pid $!): $W/pipeline.log"
  exit 0
fi
SITE=${KIT_SITE:-/root/site}
BUDGET=${JOB_BUDGET_S:-1260}
REPRODUCTIONS=${REPRODUCTIONS:-10}
ROUNDS=${AGREEMENT_ROUNDS:-10}
LANES=" ${LANES:-bf16 checkpoint-fp8 fp8 hybrid} "
# The engine is started as `python -m ...` by this interpreter and finds vLLM through
# PYTHONPATH, which the cuda profile passes on: no wrapper needed.
export PYTHONPATH=$SITE:$PROJECT PYTHONUNBUFFERED=1
export REGISTRY_KEYS_DIR=$W/keys REGISTRY_HOME=$W/.registry REGISTRY_HASH_CACHE=$W/hashes.sqlite
# A shared multi-GPU host must keep NVLink multicast off (../.library/device/KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset REGISTRY_DATABASE_URL
export COLUMNS=120
MODELS=$W/models
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
mkdir -p "$W/logs" "$W/runs" "$W/compare"
rm -f "$W/DONE"
cd "$PROJECT"
R() { python3 -m registry "$@"; }
left() { echo $((BUDGET - SECONDS)); }
LAST_RUN_S=150  # an engine start and one suite on a 3 B model, until one is measured
step() {  # step NAME CMD...: run, log to logs/NAME.log and the console, time it
  local name=$1; shift
  printf '\n== %s  [%s, %ss left]  %s\n' "$name" "$(date -u +%H:%M:%S)" "$(left)" "$*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$W/logs/$name.log"
  local rc=${PIPESTATUS[0]}
  printf -- '-- %s: exit %s after %ss\n' "$name" "$rc" "$((SECONDS - t0))"
  [ "$rc" = 0 ] || echo "$name=$rc" >> "$W/logs/failed-steps.txt"  # from subshells too
  return "$rc"
}
fits() {  # fits SECONDS: is there time for one more step of that length?
  [ "$(left)" -gt "$1" ] || { echo "-- skipped: $(left) s left, about $1 s needed"; return 1; }
}
run_json() {  # run_json NAME RECIPE [ARGS]: run and seal; NAME=<record> into records.txt
  # (the record id comes from the run's own JSON: runs on two GPUs at once seal concurrently)
  step "run-$1" R run "recipes/$2.toml" --models "$MODELS" --out "$W/runs/$1" --json "${@:3}"
  echo "$1=$(python3 -c 'import json, sys; print((json.load(open(sys.argv[1])).get("record") or {}).get("id", ""))' \
    "$W/logs/run-$1.log" 2>/dev/null)" >> "$W/logs/records.txt"
}
record() { sed -n "s/^$1=//p" "$W/logs/records.txt" 2>/dev/null | tail -1; }
run_lane() {  # run_lane NAME RECIPE: run and seal if it fits; REC = the new record or empty
  local t0=$SECONDS
  REC=
  fits "$LAST_RUN_S" || return 1
  run_json "$1" "$2"
  REC=$(record "$1")
  LAST_RUN_S=$((SECONDS - t0))
}

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader \
  | tee "$W/logs/nvidia-smi.txt"
git log -1 --format='project %H %s' | tee "$W/logs/project.txt"
PLAN=${PLAN:-bf16}
[ "$PLAN" = controlled ] || [ "$PLAN" = ab ] && LANES=" bf16 "  # its checkpoint only
{  # clocks, power, temperature, throttling, utilisation: the whole job, every plan
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,memory.used,clocks_event_reasons.active \
    --format=csv -lms 250 > "$W/logs/smi.csv" 2>&1 &
  SMI_PID=$!
}
NAMES=(llama-3b)
[ "$PLAN" = hybrid ] && NAMES=(hybrid-2b)
[ "$GPUS" -ge 2 ] && [ "$PLAN" = followup ] && NAMES+=(llama-3b-kv-fp8)
[ "$GPUS" = 1 ] && [[ $LANES == *" checkpoint-fp8 "* ]] && NAMES+=(llama-3b-kv-fp8)
[ "$GPUS" = 1 ] && [[ $LANES == *" hybrid "* ]] && NAMES+=(hybrid-2b)
step checkpoints python3 tools/sized_checkpoint.py --out "$MODELS" --device cuda "${NAMES[@]}"
rm -rf "$W/.registry" "$W/keys" "$W/runs"/* "$W/logs/records.txt" "$W/logs/checkpoints" \
  "$W/logs/failed-steps.txt"
if [ -n "${RESUME:-}" ]; then  # the earlier lease's home, signed on with the key it trusted
  tar -xzf "$RESUME/home.tar.gz" -C "$W" && cp "$RESUME/records.txt" "$W/logs/records.txt" \
    && mkdir -p "$W/keys" && cp -r "$RESUME/keys/." "$W/keys/" && chmod 600 "$W"/keys/*.pem \
    || { echo "RESUME=$RESUME: no home.tar.gz, records.txt and keys/ there"; exit 2; }
fi
for m in "${NAMES[@]}"; do  # the checkpoints' small files, for re-derivation elsewhere
  mkdir -p "$W/logs/checkpoints/$m"
  cp "$MODELS/$m"/*.json "$MODELS/$m"/.sized-checkpoint.json "$W/logs/checkpoints/$m/" 2>/dev/null
  R inspect "$MODELS/$m" --json > "$W/logs/checkpoints/$m.inspect.json" 2>&1
done
if [ -z "${RESUME:-}" ]; then
  step keys-init R keys init
  step init R init "$W"
  [ -n "${TRUST_PEM:-}" ] && step trust R keys trust "$TRUST_PEM"
fi

if [ "$GPUS" -ge 2 ]; then
  # One-GPU work runs two at a time, one per GPU: the executor takes the first device
  # of the caller's CUDA_VISIBLE_DEVICES.
  again() {  # again GPU RECORD NAME: one reproduction on one GPU
    (export CUDA_VISIBLE_DEVICES=$1; step "reproduce-$3" R reproduce "$2" --models "$MODELS" \
      --out "$W/runs/$3" --json)
  }
  pair() {  # pair CMD0 CMD1: one command per GPU, at once (0 on GPU 0, 1 on GPU 1)
    local t0=$SECONDS
    (export CUDA_VISIBLE_DEVICES=0; eval "$1") & sleep 5
    (export CUDA_VISIBLE_DEVICES=1; eval "$2") & wait
    LAST_RUN_S=$((SECONDS - t0))
  }
fi
if [ "$PLAN" = hybrid ]; then  # the sliding-window hybrid alone, on one GPU
  run_lane hybrid hybrid-2b-sliding-cuda
elif [ "$PLAN" = ab ]; then  # is a 4% KV-precision difference decided on one GPU?
  SIDES=("${AB_A:-llama-3b-bf16-kv-cuda}" "${AB_B:-llama-3b-fp8-kv-cuda}")
  FIRST=${AB_STARTS:-3} MOST=${AB_MAX_STARTS:-${AB_STARTS:-3}}
  LAST_RUN_S=$((2 * FIRST * 80))  # the first look, until one A/B is measured
  for i in $(seq 1 "${AB_REPEATS:-1}"); do  # the sides swap on every repeat
    fits "$LAST_RUN_S" || break
    a=${SIDES[$(( (i + 1) % 2 ))]} b=${SIDES[$(( i % 2 ))]} t0=$SECONDS
    suffix=; [ "$i" -gt 1 ] && suffix=-$i
    minutes=$(( ($(left) - 240) / 60 ))  # no pair starts that would not end in time
    [ "$minutes" -ge 1 ] || minutes=1
    step "ab-kv$suffix" R ab "recipes/$a.toml" "recipes/$b.toml" --delta precision.kv_cache \
      --starts "$FIRST" --max-starts "$MOST" --budget-minutes "$minutes" \
      --models "$MODELS" --out "$W/runs/ab$suffix" --json
    LAST_RUN_S=$(( (SECONDS - t0) < 2 * FIRST * 80 ? (SECONDS - t0) : 2 * FIRST * 80 ))
  done
elif [ "$PLAN" = controlled ]; then  # does a control cancel what one GPU drifts by?
  LANE_RECIPE=${CONTROL_RECIPE:-llama-3b-bf16-kv-cuda}
  SEALED=${SEALED_STARTS:-3} EACH=${CONTROL_STARTS:-3}
  LAST_RUN_S=$((2 * EACH * 80))  # until one is measured
  if [ -z "${RESUME:-}" ]; then  # else sealed in the earlier lease
    for side in record control; do
      t0=$SECONDS
      run_json "$side" "$LANE_RECIPE" --starts "$SEALED"
      LAST_RUN_S=$(( (SECONDS - t0) * 2 * EACH / SEALED ))
    done
  fi
  REC=$(record record) CTRL=$(record control)
  [ -n "$REC" ] && [ -n "$CTRL" ] && step foresee R reproduce "$REC" --control "$CTRL" \
    --starts "$EACH" --dry-run --models "$MODELS"
  for i in $(seq 1 "$REPRODUCTIONS"); do
    [ -n "$REC" ] && [ -n "$CTRL" ] && fits "$LAST_RUN_S" || break
    t0=$SECONDS
    step "reproduce-$i" R reproduce "$REC" --control "$CTRL" --starts "$EACH" \
      --models "$MODELS" --out "$W/runs/controlled-$i" --json
    LAST_RUN_S=$((SECONDS - t0))
  done
elif [ "$GPUS" -ge 2 ] && [ "$PLAN" = followup ]; then
  pair "run_json checkpoint-fp8 llama-3b-checkpoint-kv-cuda" "run_json fp8 llama-3b-fp8-kv-cuda"
  CKPT=$(record checkpoint-fp8) FP8=$(record fp8)
  [ -n "$CKPT" ] && [ -n "$FP8" ] && step diff-fp8 R diff "$CKPT" "$FP8"
  fits "$LAST_RUN_S" && pair "again 0 $CKPT checkpoint-fp8-again" "again 1 $FP8 fp8-again"
  if fits "$LAST_RUN_S"; then
    run_json checkpoint-fp8-tp2 llama-3b-checkpoint-kv-cuda-tp2; CKPT2=$(record checkpoint-fp8-tp2)
    [ -n "$CKPT2" ] && [ -n "$CKPT" ] && step diff-checkpoint-tp2 R diff "$CKPT" "$CKPT2"
    [ -n "$CKPT2" ] && fits "$LAST_RUN_S" && step reproduce-checkpoint-fp8-tp2-again R reproduce \
      "$CKPT2" --models "$MODELS" --out "$W/runs/checkpoint-fp8-tp2-again" --json
  fi
  for i in $(seq 1 2 "${EAGER_RUNS:-8}"); do
    fits "$LAST_RUN_S" || break
    pair "run_json eager-$i llama-3b-bf16-kv-cuda-eager" "run_json eager-$((i + 1)) llama-3b-bf16-kv-cuda-eager"
  done
elif [ "$GPUS" -ge 2 ]; then
  pair "run_json bf16 llama-3b-bf16-kv-cuda" "run_json invariant llama-3b-bf16-kv-cuda-invariant"
  BF16=$(record bf16) INV=$(record invariant)
  [ -n "$BF16" ] && step teacher-set R teacher set "$BF16" --lane llama-3b-bf16-exact-cuda
  [ -n "$INV" ] && step teacher-set-invariant R teacher set "$INV" --lane llama-3b-bf16-invariant-cuda
  for i in $(seq 1 2 "$REPRODUCTIONS"); do  # an odd count is rounded up
    [ -n "$BF16" ] && fits "$LAST_RUN_S" || break
    pair "again 0 $BF16 bf16-again-$i" "again 1 $BF16 bf16-again-$((i + 1))"
  done
  if fits "$LAST_RUN_S"; then
    run_json tp2 llama-3b-bf16-kv-cuda-tp2; TP2=$(record tp2)
    [ -n "$TP2" ] && [ -n "$BF16" ] && step diff-tp2 R diff "$BF16" "$TP2"
    [ -n "$TP2" ] && fits "$LAST_RUN_S" && step reproduce-tp2-again R reproduce "$TP2" \
      --models "$MODELS" --out "$W/runs/tp2-again" --json
  fi
  [ -n "$INV" ] && fits "$LAST_RUN_S" && \
    pair "again 0 $INV invariant-again-1" "again 1 $INV invariant-again-2"
else
  CKPT= FP8=
  run_lane bf16 llama-3b-bf16-kv-cuda; BF16=$REC
  [[ $LANES == *" checkpoint-fp8 "* ]] && run_lane checkpoint-fp8 llama-3b-checkpoint-kv-cuda && CKPT=$REC
  [[ $LANES == *" fp8 "* ]] && run_lane fp8 llama-3b-fp8-kv-cuda && FP8=$REC
  [[ $LANES == *" hybrid "* ]] && run_lane hybrid hybrid-2b-sliding-cuda
  [ -n "$BF16" ] && [ -n "$CKPT" ] && step diff-checkpoint R diff "$BF16" "$CKPT"
  [ -n "$BF16" ] && [ -n "$FP8" ] && step diff-fp8 R diff "$BF16" "$FP8"
  if [ -n "$BF16" ]; then
    step teacher-set R teacher set "$BF16" --lane llama-3b-bf16-exact-cuda
    [ "$ROUNDS" -gt 0 ] && fits $((LAST_RUN_S + ROUNDS * 15)) && step agreement python3 tools/benchmarks/client_agreement.py \
      --recipe recipes/llama-3b-bf16-kv-cuda.toml --models "$MODELS" --rounds "$ROUNDS" \
      --json "$W/compare/agreement.json"
    for i in $(seq 1 "$REPRODUCTIONS"); do
      fits "$LAST_RUN_S" || break
      t0=$SECONDS
      step "reproduce-$i" R reproduce "$BF16" --models "$MODELS" --out "$W/runs/bf16-again-$i" --json
      LAST_RUN_S=$((SECONDS - t0))
    done
  fi
fi

step verify R verify --all
R list > "$W/logs/list.txt" 2>&1
R list --json > "$W/logs/list.json" 2>&1
for id in $(python3 -c 'import json, sys; print(" ".join(r["id"] for r in json.load(open(sys.argv[1]))))' \
            "$W/logs/list.json" 2>/dev/null); do
  R show "$id" --json > "$W/logs/show-${id:0:12}.json" 2>&1
done
for status in "$W"/runs/*/status.json; do  # not a controlled reproduction's starts
  [ -f "$status" ] || continue
  run=$(dirname "$status")
  R resolve "$run" --json > "$W/logs/resolve-$(basename "$run").json" 2>&1
done
python3 tools/gpu/figures.py "$W" 2>&1 | tee "$W/logs/figures.txt"
echo "failed steps: $(tr '\n' ' ' < "$W/logs/failed-steps.txt" 2>/dev/null || echo none)" \
  | tee "$W/logs/failed.txt"
[ -n "${SMI_PID:-}" ] && kill "$SMI_PID" 2>/dev/null
date -u +%FT%TZ > "$W/DONE"
