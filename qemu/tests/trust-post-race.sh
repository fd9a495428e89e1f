# Eight threads racing POST/CANCEL at capacity with completions arriving:
# after close every page pin is released (the process's VmPin returns).
o2g-vmtest trust-post-race 20
