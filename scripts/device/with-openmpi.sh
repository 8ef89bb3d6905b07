# Sourced on a GPU machine without MPI: unpacks the Open MPI carried by
# scripts/device/carry-openmpi.sh and sets the environment mpirun needs on one host.
#   source scripts/device/with-openmpi.sh .device/openmpi.tar.gz [DIR]
_tgz=${1:-.device/openmpi.tar.gz}
_dir=${2:-/tmp/powerlab-openmpi}
mkdir -p "$_dir" && tar -C "$_dir" -xzf "$_tgz"
export OPAL_PREFIX="$_dir/openmpi/usr"
export PATH="$OPAL_PREFIX/bin:$PATH"
export LD_LIBRARY_PATH="$OPAL_PREFIX/lib/x86_64-linux-gnu:$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# One host: shared memory and loopback only, no fabric libraries needed.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
# The lent machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# PMIx's zlib plugin does not load from a moved prefix; harmless.
export PMIX_MCA_pcompress_base_silence_warning=1
unset _tgz _dir
