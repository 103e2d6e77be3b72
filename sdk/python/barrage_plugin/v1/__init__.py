# The plugin protocol's generated modules (sdk/proto/barrage/plugin/v1/plugin.proto): regenerate
# them with sdk/python/generate.sh.
