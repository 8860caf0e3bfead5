#!/bin/sh
# A CGI script: runs as bob (uid 31002) in its own process.
printf "Content-Type: text/plain\n\n"
echo "Hello from CGI, uid $(id -u)"
