#!/usr/bin/env bash
# A developer check: the OpenMRS 3 front-end projects' own Playwright suites, at the versions
# this distribution pins, run against this runtime built with the reference application's
# content packages, behind the project's own front end and gateway (frontend/e2e/run.sh,
# E2E_VIA=gateway), in Debian's Chromium. CI cannot run it: it needs the suites' and the
# content's public repositories.
#
# What it builds, in $O3_E2E_WORK (default target/o3-e2e):
# - content/: the reference application's content as the reference distribution assembles
#   it, `referenceapplication-demo` (whose demo data the suites name by uuid) depending on
#   `referenceapplication`, under an empty base; the distribution's own front-end files
#   (translations, modules) but no config.json, so the modules run on their defaults as in
#   the reference distribution. Its findings go to a baseline, with which the image builds.
# - runtime: target/debug/runtime built from that content (CONTENT_ROOT), copied aside; the
#   normal build is made again afterwards so target/debug/runtime is the distribution's.
# - suites/<suite>/: the suite's e2e/, playwright.config.ts and example.env at its tag, with
#   the exact @playwright/test, dotenv and dayjs versions of the project's lock file, and a
#   configuration over the suite's own (o3.config.ts) that only points Playwright at Debian's
#   Chromium, turns video off and adds a JSON report: timeouts and workers stay upstream's.
#
# The repositories are cloned from GitHub unless given as local git directories:
#   O3_REFAPP_GIT, O3_DEMO_GIT, O3_PATIENT_MANAGEMENT_GIT, O3_PATIENT_CHART_GIT
# Usage: bash tools/o3-e2e/run.sh [patient-management|patient-chart|all] [spec file ...]
#   e.g. bash tools/o3-e2e/run.sh patient-management edit-patient.spec.ts
# Needs frontend/spa (bash frontend/build.sh), chromium and nginx. Results: tools/o3-e2e/results/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

which_suites=${1:-all}
shift || true
work=${O3_E2E_WORK:-$root/target/o3-e2e}
mkdir -p "$work"

# The versions: the front-end modules this distribution pins, the content the suites name.
REFAPP_TAG=1.4.0
DEMO_TAG=1.9.1
PATIENT_MANAGEMENT_TAG=v11.1.0
PATIENT_CHART_TAG=v12.3.4

git_dir() { # variable, repository name → a git directory holding the repository's tags
  local given=${!1:-}
  if [ -n "$given" ]; then echo "$given"; return; fi
  local dir="$work/repos/$2.git"
  [ -d "$dir" ] || git clone -q --bare "https://github.com/openmrs/$2" "$dir" >&2
  echo "$dir"
}

archive() { # git dir, tag, target dir, paths…
  local dir=$1 tag=$2 target=$3
  shift 3
  rm -rf "$target"
  mkdir -p "$target"
  git --git-dir="$dir" archive "$tag" "$@" | tar -x -C "$target"
}

# 1. The content, and the runtime built from it.
content="$work/content"
rm -rf "$content"
mkdir -p "$content/openmrs_config" "$content/baselines" "$content/frontend/config"
archive "$(git_dir O3_REFAPP_GIT openmrs-content-referenceapplication)" "$REFAPP_TAG" \
  "$content/content-packages/referenceapplication"
archive "$(git_dir O3_DEMO_GIT openmrs-content-referenceapplication-demo)" "$DEMO_TAG" \
  "$content/content-packages/referenceapplication-demo"
printf '\n# As the reference distribution assembles it.\ncontent.referenceapplication=^%s\n' "$REFAPP_TAG" \
  >> "$content/content-packages/referenceapplication-demo/content.properties"
cat > "$content/content.properties" <<PROPS
# The O3 suites' environment: the reference application's demo content, nothing of its own.
name=o3-e2e
version=1.0.0
content.referenceapplication-demo=^$DEMO_TAG
PROPS
cp frontend/config/translations.json "$content/frontend/config/"
cp frontend/spa-modules.json "$content/frontend/"
for module in frontend/modules/*/; do
  mkdir -p "$content/$module"
  cp "$module/package.json" "$content/$module"
done

[ -x target/debug/compiler ] || cargo build -q -p compiler
./target/debug/compiler check --root "$content" --build-type distro \
  --write-baseline "$content/baselines/refapp.json" > "$work/compiler-check.txt" 2>&1 || true
echo "compiler on the reference content: $(tail -n 1 "$work/compiler-check.txt") ($work/compiler-check.txt)"
CONTENT_ROOT="$content" BUILD_TYPE=distro VALIDATOR_BASELINE=baselines/refapp.json cargo build -q -p runtime
cp --remove-destination target/debug/runtime "$work/runtime"
cargo build -q -p runtime  # target/debug/runtime is the distribution's again

# 2. The suites.
suites=()
case "$which_suites" in
  all) suites=(patient-management patient-chart) ;;
  patient-management|patient-chart) suites=("$which_suites") ;;
  *) echo "unknown suite $which_suites: patient-management, patient-chart or all" >&2; exit 2 ;;
esac
source tools/node.sh
for suite in "${suites[@]}"; do
  dir="$work/suites/$suite"
  if [ "$suite" = patient-management ]; then
    tag=$PATIENT_MANAGEMENT_TAG deps="@playwright/test@1.53.2 dotenv@16.6.1 dayjs@1.11.13"
    git=$(git_dir O3_PATIENT_MANAGEMENT_GIT openmrs-esm-patient-management)
  else
    tag=$PATIENT_CHART_TAG deps="@playwright/test@1.51.1 dotenv@16.4.5 dayjs@1.11.13"
    git=$(git_dir O3_PATIENT_CHART_GIT openmrs-esm-patient-chart)
  fi
  modules="$work/suites/node_modules-$suite"
  [ -d "$modules/node_modules/@playwright/test" ] || {
    mkdir -p "$modules"
    # shellcheck disable=SC2086
    (cd "$modules" && echo '{"private":true}' > package.json &&
      PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --silent $deps)
  }
  archive "$git" "$tag" "$dir" e2e playwright.config.ts example.env
  ln -sfn "$modules/node_modules" "$dir/node_modules"
  cp "$here/o3.config.ts" "$dir/o3.config.ts"
done

# 3. The runs, behind the gateway, in English as the suites read the screens.
export O3_E2E_WORK="$work" O3_E2E_SUITES="${suites[*]}" O3_E2E_SPECS="$*" O3_E2E_RESULTS="$here/results"
SPA_DEFAULT_LOCALE=en_GB E2E_VIA=gateway E2E_FLOW=../../tools/o3-e2e/suites.mjs \
  bash frontend/e2e/run.sh "$work/runtime"
