import logging

# dp-accounting logs (via absl) when it drops an RDP order it cannot evaluate; the bound stays valid. Keep output quiet.
logging.getLogger("absl").setLevel(logging.ERROR)  # (the library now does this itself)
