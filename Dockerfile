# kbm on a CUDA runtime image: `docker build -t kbm .` then `docker run --gpus all kbm doctor`.
# NVRTC comes from the nvidia-cuda-nvrtc wheel, so the runtime image is enough.
FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04

# Ubuntu's python3 is whatever the base image's release ships; pinning it would break on every
# security update of the base image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 --shell /bin/bash kbm
USER 10001
WORKDIR /home/kbm/src

ENV VIRTUAL_ENV=/home/kbm/venv
ENV PATH="/home/kbm/venv/bin:${PATH}"
RUN python3 -m venv /home/kbm/venv

COPY --chown=kbm:kbm . /home/kbm/src
RUN scripts/install.sh

WORKDIR /home/kbm
ENTRYPOINT ["kbm"]
CMD ["--help"]
