#!/bin/sh
sglang serve m --radix-eviction-policy tlru --radix-eviction-policy-config '{"threshold": "4096", "next_prompt_estimate": 512}'
