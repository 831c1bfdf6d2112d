# The appliance VM image (Debian packages, mmdebstrap, genimage) and its boot test.
# Included from the top-level Makefile; paths are relative to the repository root.
#
#   make vm-image            image/out/fulcrum.qcow2 and fulcrum.img (rebuilt when inputs change)
#   make vm                  boot it in qemu: serial console here, dashboard and SSH forwarded
#   make test-image          the end-to-end boot tests (tests/image), building the image if needed
#   make test-image-pair     only the HA pair of two appliance images, upgraded with one failover
#                            (tests/image/test_image_pair.py)
#   make bundle              image/out/fulcrum-VERSION.raucb: a signed RAUC bundle of the image's root
#                            file system, for an A/B upgrade (image/rauc/README.md)
#   make image-constraints   re-pin the image's Python packages from the development venv
#   make parts-check         the Debian image and the Buildroot build carry the same parts (image/parts.tsv)

IMAGE_OUT := image/out
# Byte code is no input: the kernel rig and the host tests write api/src's __pycache__ meanwhile.
IMAGE_INPUTS := $(shell find image/build-vm-image image/lib image/genimage image/grub image/packages.list image/rauc \
	image/constraints.txt overlay api/src api/pyproject.toml -type f -not -path '*/__pycache__/*' 2>/dev/null) \
	$(wildcard webui/dist/index.html)

.PHONY: vm-image vm test-image test-image-pair image-constraints parts-check bundle

# One build at a time: make test builds the image in one lane while another may reach test-image.
# The inner make decides what is out of date only once it holds the lock, so the second waits and
# then finds the image built.
vm-image:
	@mkdir -p $(IMAGE_OUT)
	flock $(IMAGE_OUT)/.build.lock $(MAKE) --no-print-directory $(IMAGE_OUT)/fulcrum.qcow2

$(IMAGE_OUT)/fulcrum.qcow2: $(IMAGE_INPUTS)
	image/build-vm-image

vm: vm-image
	image/run-vm

bundle: vm-image
	image/make-bundle

test-image: vm-image
	.venv/bin/python -m pytest -p no:cacheprovider -m image -o testpaths=tests/image tests/image

test-image-pair: vm-image
	.venv/bin/python -m pytest -p no:cacheprovider -m image -o testpaths=tests/image tests/image/test_image_pair.py

image-constraints:
	{ echo "# Versions the image's venv installs (pip --constraint): pip freeze of the development venv,"; \
	  echo "# regenerated with \`make image-constraints\`."; \
	  .venv/bin/pip freeze --exclude-editable; } > image/constraints.txt

parts-check:
	image/check-parts
