"""Test images and torchvision's view of them, for tests/frames (Debian's /usr/bin/python3
with python3-pil, python3-numpy, python3-torch and python3-torchvision).

    make_images.py OUT_DIR RESIZE CROP_H CROP_W

Writes JPEG and PNG images of odd sizes (RGB, grayscale, RGBA, palette) and, for each
IMAGE: IMAGE.decoded.npy (uint8 HWC, PIL's open().convert("RGB")), IMAGE.resized.npy (uint8
HWC, torchvision's Resize(RESIZE) on it) and IMAGE.torchvision.npy (float32 HWC,
Resize -> CenterCrop -> ToTensor -> Normalize with ImageNet's mean and std).
"""
import os
import sys

import numpy as np
from PIL import Image
from torchvision import transforms

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def smooth(rng, h, w, channels):
    """A photo-like image: a smooth gradient with noise (JPEG of pure noise is atypical)."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 / max(w - 1, 1)), (y * 255 / max(h - 1, 1)),
                     ((x + y) * 127 / max(h + w - 2, 1))], axis=-1)[..., :channels]
    noisy = base + rng.normal(0, 25, size=base.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def main():
    out, resize, crop_h, crop_w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    images = {
        "rgb_61x45.jpg": Image.fromarray(smooth(rng, 45, 61, 3)),
        "gray_50x80.jpg": Image.fromarray(smooth(rng, 80, 50, 1)[..., 0], "L"),
        "rgb_37x50.png": Image.fromarray(smooth(rng, 50, 37, 3)),
        "gray_40x40.png": Image.fromarray(smooth(rng, 40, 40, 1)[..., 0], "L"),
        "rgba_70x33.png": Image.fromarray(
            np.concatenate([smooth(rng, 33, 70, 3), rng.integers(0, 256, (33, 70, 1), np.uint8)],
                           axis=-1), "RGBA"),
        "palette_29x31.png": Image.fromarray(smooth(rng, 31, 29, 3)).convert("P"),
        "rgb_403x301.jpg": Image.fromarray(smooth(rng, 301, 403, 3)),
    }
    transform = transforms.Compose([
        transforms.Resize(resize),
        transforms.CenterCrop((crop_h, crop_w)),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    for name, image in images.items():
        path = os.path.join(out, name)
        if name.endswith(".jpg"):
            image.save(path, quality=90)
        else:
            image.save(path)
        rgb = Image.open(path).convert("RGB")  # torchvision's default loader (pil_loader)
        np.save(path + ".decoded.npy", np.asarray(rgb, dtype=np.uint8))
        np.save(path + ".resized.npy", np.asarray(transforms.Resize(resize)(rgb), dtype=np.uint8))
        chw = transform(rgb).numpy()
        np.save(path + ".torchvision.npy", np.ascontiguousarray(chw.transpose(1, 2, 0)).astype(np.float32))


if __name__ == "__main__":
    main()
