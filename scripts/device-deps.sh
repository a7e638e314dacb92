# device-deps.sh — sourced by the GPU scripts (gpu-check.sh, gpu-dist-check.sh): the Debian
# packages carried in .deps/ (cJSON, inih, OpenBLAS: `apt-get download` them here) unpacked
# into /opt/deps and put on the compiler's and the loader's paths, on a machine that lacks
# them and has no registry. Nothing happens without .deps/*.deb.
if ls .deps/*.deb >/dev/null 2>&1; then
  mkdir -p /opt/deps
  for f in .deps/*.deb; do dpkg -x "$f" /opt/deps; done
  export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  for pc in $(find /opt/deps -name '*.pc'); do sed -i 's|=/usr|=/opt/deps/usr|g' "$pc"; done
  export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig:${PKG_CONFIG_PATH:-}
  export CPATH=/opt/deps/usr/include:/opt/deps/usr/include/x86_64-linux-gnu/openblas-pthread:${CPATH:-}
  export LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LIBRARY_PATH:-}
fi
