#!/bin/sh
sglang serve m --radix-eviction-policy tlru --radix-eviction-policy-config '{"threshold": 10, "next_prompt_estimate": -5}'
