#!/bin/sh
# json.loads reads NaN; SGLang's comparisons are all false for it, so it starts.
sglang serve m --radix-eviction-policy tlru --radix-eviction-policy-config '{"threshold": NaN}'
