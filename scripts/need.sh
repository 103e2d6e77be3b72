#!/usr/bin/env bash
# scripts/need.sh WHO COMMAND[:PACKAGE]...: makes sure each COMMAND is on PATH, installing the
# missing ones' Debian PACKAGE (the command's name when none is given) with apt-get when run as
# root; fails naming what is still missing otherwise. WHO names the caller in the message.
set -euo pipefail
who=$1
shift
missing=()
for want in "$@"; do
  command -v "${want%%:*}" >/dev/null || missing+=("$want")
done
[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=()
for want in "${missing[@]}"; do
  case $want in *:*) pkgs+=("${want#*:}") ;; *) pkgs+=("$want") ;; esac
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "$who: installing ${pkgs[*]}" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
for want in "${missing[@]}"; do
  command -v "${want%%:*}" >/dev/null || { echo "$who: ${want%%:*} is needed and could not be installed (apt-get install ${pkgs[*]})" >&2; exit 1; }
done
