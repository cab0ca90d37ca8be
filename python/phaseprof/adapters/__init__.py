"""Framework adapters: framework knowledge, one module per framework.

ADAPTERS maps the name of a module to the adapter module that instruments
it. Under ``phaseprof record`` the boot (phaseprof._boot) calls the adapter's
``install(module)`` once, right after that module's import completed (or at
once if the module was already imported when the boot ran). See README.md in
this folder for the contract.
"""

ADAPTERS = {
    "torch": "phaseprof.adapters.torch",
    "torch.distributed": "phaseprof.adapters.torch_distributed",
    "torch.utils.data": "phaseprof.adapters.torch_data",
    "torch._dynamo": "phaseprof.adapters.torch_compile",
    "pytorch_lightning": "phaseprof.adapters.lightning",
    "lightning.pytorch": "phaseprof.adapters.lightning",
}
