#!/usr/bin/env bash
# The five-minute walk-through, against a running server: the operator sets up a client, the
# client migrates the example account (docs/examples/account.json), reads it back and adds a note.
# Every call is printed with its HTTP status; a step answered with another status stops the script
# (exit 1, naming the step). Each run uses new names, so it can run again against the same server.
#
#   OPERATOR_API_KEY=amo_… bash scripts/walkthrough.sh
#
# BASE_URL is the server (default http://127.0.0.1:3000). Needs curl and node.
set -euo pipefail

if [ -z "${OPERATOR_API_KEY:-}" ]; then
  echo "usage: OPERATOR_API_KEY=<operator key> [BASE_URL=http://127.0.0.1:3000] bash scripts/walkthrough.sh (the key is the one the server printed on its first start, or the OPERATOR_API_KEY it was started with)" >&2
  exit 2
fi
for tool in curl node; do
  command -v "$tool" >/dev/null || { echo "walkthrough: $tool is needed" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
BASE=${BASE_URL:-http://127.0.0.1:3000}
BASE=${BASE%/}
API="$BASE/v1/data-import"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# New names for every run: the operator's names and codes are unique.
run="$(date -u +%Y%m%d%H%M%S)$$"
ORGANISATION="Walk-through $run"
SUPPLIER="WALK_$run"
TEAM="Walk-through team $run"
EXTERNAL="WALK-$run"

# json FILE EXPRESSION: prints EXPRESSION evaluated on the JSON in FILE (as `d`); strings as they are.
json() {
  node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
    const v = new Function("d", "return (" + process.argv[2] + ")")(d)
    process.stdout.write(typeof v === "string" ? v : JSON.stringify(v ?? null))
  ' "$1" "$2"
}

# request STEP EXPECTED METHOD URL [BODY-FILE] [TOKEN]: the answer's body is left in $work/body.
request() {
  local step=$1 expected=$2 method=$3 url=$4 body=${5:-} token=${6:-} status
  local args=(-sS -o "$work/body" -w '%{http_code}' -X "$method" "$url")
  if [ -n "$body" ]; then args+=(-H 'content-type: application/json' --data-binary "@$body"); fi
  if [ -n "$token" ]; then args+=(-H "Authorization: Bearer $token"); fi
  status=$(curl "${args[@]}") || { echo "step \"$step\" failed: no answer from $url (is the server running?)" >&2; exit 1; }
  printf '%-34s %-6s %s → %s\n' "$step" "$method" "${url#"$BASE"}" "$status"
  if [ "$status" != "$expected" ]; then
    echo "step \"$step\" failed: expected $expected, got $status: $(head -c 2000 "$work/body")" >&2
    exit 1
  fi
}

# graphql STEP TOKEN QUERY [NAME VALUE]...: a GraphQL call (TOKEN may be empty) with string
# variables; it must answer 200 without errors (GraphQL reports refusals inside a 200).
graphql() {
  local step=$1 token=$2 query=$3
  shift 3
  node -e '
    const [query, ...pairs] = process.argv.slice(1)
    const variables = {}
    for (let i = 0; i < pairs.length; i += 2) variables[pairs[i]] = pairs[i + 1]
    process.stdout.write(JSON.stringify({ query, variables }))
  ' "$query" "$@" > "$work/request.json"
  request "$step" 200 POST "$BASE/graphql" "$work/request.json" "$token"
  if [ "$(json "$work/body" 'd.errors === undefined')" != "true" ]; then
    echo "step \"$step\" failed: $(json "$work/body" 'd.errors.map((e) => (e.extensions?.code ?? "error") + ": " + e.message).join("; ")')" >&2
    exit 1
  fi
}

echo "Walk-through against $BASE (organisation \"$ORGANISATION\", supplier $SUPPLIER, account $EXTERNAL)"
echo

echo "1. The operator obtains a token with the operator key."
graphql "operator token" "" 'mutation($key: String) { obtainToken(input: {APIKey: $key}) { token expiresIn } }' key "$OPERATOR_API_KEY"
OPERATOR_TOKEN=$(json "$work/body" d.data.obtainToken.token)

echo "2. The operator sets up a client: organisation, API key, import supplier, operations team."
graphql "create organisation" "$OPERATOR_TOKEN" 'mutation($name: String!) { createOrganisation(input: {name: $name}) { id name } }' \
  name "$ORGANISATION"
graphql "create API key" "$OPERATOR_TOKEN" 'mutation($org: String!) { createApiKey(input: {organisation: $org}) { id key } }' \
  org "$ORGANISATION"
CLIENT_KEY=$(json "$work/body" d.data.createApiKey.key)
graphql "create import supplier" "$OPERATOR_TOKEN" 'mutation($code: String!, $org: String!) { createImportSupplier(input: {code: $code, organisation: $org}) { code status } }' \
  code "$SUPPLIER" org "$ORGANISATION"
graphql "create operations team" "$OPERATOR_TOKEN" 'mutation($name: String!) { createOperationsTeam(input: {name: $name}) { id name } }' \
  name "$TEAM"

echo "3. The client obtains its own token with its API key (amk_…, shown once at creation)."
graphql "client token" "" 'mutation($key: String) { obtainToken(input: {APIKey: $key}) { token refreshToken } }' key "$CLIENT_KEY"
TOKEN=$(json "$work/body" d.data.obtainToken.token)
request "list import processes" 200 GET "$API/all-account-import-processes/$SUPPLIER/" "" "$TOKEN"
echo "   → $(cat "$work/body") (nothing staged yet)"

echo "4. Validate, stage, dry-run and create the example account."
node -e '
  const a = JSON.parse(require("fs").readFileSync("docs/examples/account.json", "utf8"))
  a.external_account_number = process.argv[1]
  a.import_supplier = process.argv[2]
  process.stdout.write(JSON.stringify(a))
' "$EXTERNAL" "$SUPPLIER" > "$work/account.json"
request "validate" 200 POST "$API/validate-account/" "$work/account.json" "$TOKEN"
echo "   → normalised: ledger_balance $(json "$work/body" d.ledgers[0].ledger_balance), landline $(json "$work/body" d.customers[0].landline)"
request "stage" 201 POST "$API/account-import-process/create-or-update/" "$work/account.json" "$TOKEN"
request "stage again (an update)" 200 POST "$API/account-import-process/create-or-update/" "$work/account.json" "$TOKEN"
node -e '
  const [external, supplier, team, dry] = process.argv.slice(1)
  process.stdout.write(JSON.stringify({ external_account_number: external, import_supplier_code: supplier, operations_team_name: team, dry_run: dry === "true" }))
' "$EXTERNAL" "$SUPPLIER" "$TEAM" true > "$work/dry-run.json"
request "dry run" 400 POST "$API/account-import-process/process/" "$work/dry-run.json" "$TOKEN"
code=$(json "$work/body" d.code)
[ "$code" = dry_run_rolled_back ] || { echo "step \"dry run\" failed: expected code dry_run_rolled_back, got $code" >&2; exit 1; }
echo "   → $code: $(json "$work/body" d.detail)"
json "$work/dry-run.json" '(({ dry_run, ...create }) => create)(d)' > "$work/create.json"
request "create" 201 POST "$API/account-import-process/process/" "$work/create.json" "$TOKEN"
ACCOUNT=$(json "$work/body" d.service_account_number)
LEDGER=$(json "$work/body" d.ledgers[0].ledger_number)
echo "   → service account number $ACCOUNT, ENERGY ledger $LEDGER"

echo "5. Read it back: its status and the account summary."
request "status" 200 GET "$API/account-transfer-status/$SUPPLIER/$EXTERNAL/" "" "$TOKEN"
echo "   → $(json "$work/body" 'd.status + " " + d.service_account_number')"
request "account summary" 200 GET "$API/accounts/$SUPPLIER/$EXTERNAL/" "" "$TOKEN"
echo "   → balance $(json "$work/body" d.ledgers[0].balance), $(json "$work/body" 'd.counts.transactions') transactions, latest event $(json "$work/body" d.latest_event.type)"

echo "6. Add a note to the account."
node -e '
  const [external, supplier] = process.argv.slice(1)
  process.stdout.write(JSON.stringify({ import_supplier: supplier, external_account_number: external, notes: [{ body: "Moved from the legacy CRM.", is_pinned: true }] }))
' "$EXTERNAL" "$SUPPLIER" > "$work/notes.json"
request "add a note" 201 POST "$API/notes/create/" "$work/notes.json" "$TOKEN"
echo "   → $(json "$work/body" d[0].status)"

echo "7. Creating it again is refused, with both numbers."
request "create again" 400 POST "$API/account-import-process/process/" "$work/create.json" "$TOKEN"
echo "   → $(json "$work/body" 'd.code + ": " + d.external_account_number + " is " + d.service_account_number')"
[ "$(json "$work/body" d.service_account_number)" = "$ACCOUNT" ] || { echo "step \"create again\" failed: the refusal names another account" >&2; exit 1; }

echo
echo "Done: $EXTERNAL of $SUPPLIER is service account $ACCOUNT."
echo "Dashboard (sign in with the operator key or this client's API key): $BASE/dashboard"
echo "API documentation: $BASE/docs"
echo "This client's API key, for the dashboard or npm run migrate (AMIS_API_KEY): $CLIENT_KEY"
