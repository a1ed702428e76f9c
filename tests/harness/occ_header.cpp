// Reference harness: NVIDIA's cuda_occupancy.h (shipped in triton's wheel), driven from a test.
// stdin: one line of device properties
//   major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM smemPerBlock smemPerSM optin reserved
// then rows "regs threads smem carveout" (carveout -1 = driver default; smem = dynamic bytes).
// stdout per row: "blocks limitWarps limitRegs limitSmem limitBlocks status".
#include <cstdio>
#include "cuda_occupancy.h"

int main() {
    cudaOccDeviceProp prop;
    long smemPerBlock, smemPerSM, optin, reserved;
    if (scanf("%d %d %d %d %d %d %ld %ld %ld %ld", &prop.computeMajor, &prop.computeMinor,
              &prop.maxThreadsPerBlock, &prop.maxThreadsPerMultiprocessor, &prop.regsPerBlock,
              &prop.regsPerMultiprocessor, &smemPerBlock, &smemPerSM, &optin, &reserved) != 10) return 2;
    prop.warpSize = 32;
    prop.numSms = 1;
    prop.sharedMemPerBlock = smemPerBlock;
    prop.sharedMemPerMultiprocessor = smemPerSM;
    prop.sharedMemPerBlockOptin = optin;
    prop.reservedSharedMemPerBlock = reserved;
    int regs, threads, carveout;
    long smem;
    while (scanf("%d %d %ld %d", &regs, &threads, &smem, &carveout) == 4) {
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024;
        attr.numRegs = regs;
        attr.sharedSizeBytes = 0;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;   // as Triton's launcher opts in
        attr.maxDynamicSharedSizeBytes = optin;
        attr.numBlockBarriers = 1;
        attr.virtualResourceCount = 0;
        cudaOccDeviceState state;
        state.carveoutConfig = carveout;
        cudaOccResult res;
        cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&res, &prop, &attr, &state, threads, smem);
        printf("%d %d %d %d %d %d\n", err == CUDA_OCC_SUCCESS ? res.activeBlocksPerMultiprocessor : -1,
               res.blockLimitWarps, res.blockLimitRegs, res.blockLimitSharedMem, res.blockLimitBlocks, (int)err);
    }
    return 0;
}
