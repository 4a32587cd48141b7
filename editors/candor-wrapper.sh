#!/bin/sh
# candor-wrapper.sh: start candor with provider settings read from a file.
#
# For ACP clients that cannot give the agent environment variables (acpx's config file), or when
# you would rather keep candor's settings in one place than in every editor's config.
# Point the client's agent command at this script by its absolute path. Arguments are passed
# on to candor (for example --log-messages).
#
# Settings file: $CANDOR_ENV_FILE, default ${XDG_CONFIG_HOME:-$HOME/.config}/candor/env.
# One KEY=value per line, no quotes, no spaces around '='; blank lines and lines starting
# with '#' are skipped. The file is read, not executed. A variable already set in the
# environment the client gives the script wins over the file. Example:
#
#   CANDOR_PROVIDER=scripted
#   CANDOR_SCRIPT=/home/me/candor/protocol/examples/demo-script.json
#
# The binary: $CANDOR_BIN if set, else ../target/release/candor next to this script (a
# checkout with `cargo build --release` done), else `candor` on PATH.
set -eu

env_file=${CANDOR_ENV_FILE:-${XDG_CONFIG_HOME:-${HOME:-}/.config}/candor/env}
if [ -r "$env_file" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            '' | '#'*) continue ;;
        esac
        key=${line%%=*}
        value=${line#*=}
        case $key in
            '' | [0-9]* | *[!A-Za-z0-9_]*)
                echo "candor-wrapper: ignoring malformed line in $env_file: $line" >&2
                continue
                ;;
        esac
        [ "$key" = "$line" ] && {
            echo "candor-wrapper: ignoring line without '=' in $env_file: $line" >&2
            continue
        }
        eval "already=\${$key+set}"
        if [ -z "$already" ]; then
            export "$key=$value"
        fi
    done <"$env_file"
fi

if [ -z "${CANDOR_BIN:-}" ]; then
    here=$(cd "$(dirname "$0")" && pwd)
    if [ -x "$here/../target/release/candor" ]; then
        CANDOR_BIN=$here/../target/release/candor
    elif command -v candor >/dev/null 2>&1; then
        CANDOR_BIN=$(command -v candor)
    else
        echo "candor-wrapper: no candor binary: set CANDOR_BIN, build with 'cargo build --release', or put candor on PATH" >&2
        exit 127
    fi
fi

exec "$CANDOR_BIN" "$@"
