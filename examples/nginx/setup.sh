#!/bin/sh
# Prepares a fresh state folder for one nginx contender: its configuration and the files it
# serves. Called by plan.toml as: sh setup.sh STATE PORT SENDFILE(on|off)
set -eu
state=$1 port=$2 sendfile=$3
mkdir -p "$state/www"
cp www/index.html "$state/www/"
head -c 65536 /dev/zero | tr '\0' x > "$state/www/64k.txt"
sed -e "s/@PORT@/$port/" -e "s#@STATE@#$state#" -e "s#@ROOT@#$state/www#" \
    -e "s/@SENDFILE@/$sendfile/" nginx.conf.in > "$state/nginx.conf"
