"""The ONU image server of the SADIS port (oltsim.api.images), in memory through StubTreq: files, the counter,
HEAD, errors and the confinement of paths to the image folder."""
from __future__ import annotations

import json
import os

import pytest
from treq.testing import StubTreq
from twisted.web.resource import Resource

from oltsim.api.images import ImageServer, packaged_images_dir, with_images
from oltsim.api.restkit import json_response

from conftest import stub_request

BASE = "http://oltsim.test"


class _Other(Resource):
    """Stands for the SADIS resource: answers every path it gets with the path, so routing is visible."""

    isLeaf = True

    def render(self, request):
        return json_response(request, 200, {"other": request.path.decode()})


@pytest.fixture()
def folder(tmp_path):
    """An image folder with two files and a subfolder, beside a secret file outside it."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.img").write_bytes(bytes(range(256)) * 40)
    (images / "sub").mkdir()
    (images / "sub" / "b.img").write_bytes(b"bee")
    (tmp_path / "secret.txt").write_bytes(b"outside")
    return images


def client_for(server: ImageServer) -> StubTreq:
    return StubTreq(with_images(_Other(), server))


def fetch(client, path, method="GET", headers=None):
    """(status, headers, body bytes) of one in-memory request."""
    return stub_request(client, BASE + path, method, headers)


def count(client) -> int:
    code, headers, body = fetch(client, "/images-count")
    assert code == 200 and headers.getRawHeaders("content-type") == ["application/json"]
    return json.loads(body)["requests"]


def test_serves_a_file_with_length_and_octet_stream(folder):
    """GET /images/<file> answers the file's bytes, its Content-Length and application/octet-stream."""
    client = client_for(ImageServer(folder))
    code, headers, body = fetch(client, "/images/a.img")
    assert code == 200 and body == (folder / "a.img").read_bytes()
    assert headers.getRawHeaders("content-type") == ["application/octet-stream"]
    responses = []
    client.get(BASE + "/images/a.img").addBoth(responses.append)
    client.flush()
    assert responses[0].length == len(body)     # the client keeps Content-Length out of the headers


def test_counter_counts_served_requests_only(folder):
    """/images-count answers BBSim's {"requests":N}: GET and HEAD of existing files count, refusals do not."""
    client = client_for(ImageServer(folder))
    assert fetch(client, "/images-count")[2] == b'{"requests":0}'
    fetch(client, "/images/a.img")
    fetch(client, "/images/sub/b.img")
    fetch(client, "/images/a.img", "HEAD")
    fetch(client, "/images/missing.img")
    fetch(client, "/images/..%2Fsecret.txt")
    assert count(client) == 3


def test_head_has_length_and_no_body(folder):
    """HEAD answers the headers of GET (length, type) without the body."""
    client = client_for(ImageServer(folder))
    code, headers, body = fetch(client, "/images/a.img", "HEAD")
    assert code == 200 and body == b""
    assert headers.getRawHeaders("content-length") == [str((folder / "a.img").stat().st_size)]
    assert headers.getRawHeaders("content-type") == ["application/octet-stream"]


def test_range_request_gets_the_whole_file(folder):
    """Ranges are not served: a Range request gets 200 and the whole file (allowed by RFC 9110)."""
    client = client_for(ImageServer(folder))
    code, _, body = fetch(client, "/images/a.img", headers={"Range": "bytes=10-19"})
    assert code == 200 and body == (folder / "a.img").read_bytes()


def test_unknown_file_is_404_json(folder):
    """A missing file answers 404 with oltsim's JSON error body, whose message carries BBSim's file-not-found."""
    client = client_for(ImageServer(folder))
    code, headers, body = fetch(client, "/images/nothing.img")
    assert code == 404 and headers.getRawHeaders("content-type") == ["application/json"]
    assert "file-not-found" in json.loads(body)["message"]


@pytest.mark.parametrize("path", [
    "/images/../secret.txt",
    "/images/..%2Fsecret.txt",
    "/images/sub%2F..%2F..%2Fsecret.txt",
    "/images/%2Fetc%2Fpasswd",
    "/images/.%2Fa.img",
    "/images/..%5Csecret.txt",
    "/images/a.img%00",
])
def test_names_leaving_the_folder_are_refused(folder, path):
    """`..`, absolute paths, encoded slashes and backslashes, NUL: 400 or 404, never a byte of another file."""
    client = client_for(ImageServer(folder))
    code, _, body = fetch(client, path)
    assert code in (400, 404) and b"outside" not in body and "message" in json.loads(body)


def test_symlink_out_of_the_folder_is_404(folder):
    """A symbolic link inside the folder that points outside it is answered as a missing file; one that stays
    inside is served."""
    os.symlink(folder.parent / "secret.txt", folder / "escape.img")
    os.symlink(folder / "sub", folder / "inner")
    os.symlink(folder.parent, folder / "up")
    client = client_for(ImageServer(folder))
    assert fetch(client, "/images/escape.img")[0] == 404
    assert fetch(client, "/images/up/secret.txt")[0] == 404
    assert fetch(client, "/images/inner/b.img")[:3:2] == (200, b"bee")


def test_directories_are_not_listed(folder):
    """A folder name, the folder itself and /images are no files: 4xx, nothing counted."""
    server = ImageServer(folder)
    client = client_for(server)
    for path in ("/images/sub", "/images/sub/", "/images/", "/images"):
        assert fetch(client, path)[0] in (400, 404), path
    assert server.requests == 0


def test_missing_folder_is_404_naming_it(tmp_path):
    """A folder that does not exist is no start-up error; image requests answer 404 naming the folder."""
    client = client_for(ImageServer(tmp_path / "nowhere"))
    code, _, body = fetch(client, "/images/software-image.img")
    assert code == 404 and "nowhere" in json.loads(body)["message"]
    assert count(client) == 0


def test_other_paths_go_to_the_other_resource(folder):
    """Everything but /images/... and /images-count is the SADIS resource's, with the full path."""
    client = client_for(ImageServer(folder))
    code, _, body = fetch(client, "/v2/cfg")
    assert code == 200 and json.loads(body) == {"other": "/v2/cfg"}
    assert json.loads(fetch(client, "/imagesX/a.img")[2]) == {"other": "/imagesX/a.img"}


def test_wrong_method_is_405(folder):
    """POST is not served (JSON 405 with Allow)."""
    client = client_for(ImageServer(folder))
    code, headers, _ = fetch(client, "/images/a.img", "POST")
    assert code == 405 and "GET" in headers.getRawHeaders("allow")[0]


def test_default_folder_is_the_packaged_configs_folder():
    """"" means the packaged configs folder, which holds oltsim's own software-image.img (version first)."""
    server = ImageServer("")
    assert server.folder == packaged_images_dir()
    code, headers, body = fetch(client_for(server), "/images/software-image.img")
    assert code == 200 and body[:14] == b"BBSM_IMG_00002" and len(body) == 32768


def test_large_file_arrives_whole(folder):
    """A file of many chunks (3 MiB and a bit) arrives byte for byte."""
    data = os.urandom(3 * 1024 * 1024 + 17)
    (folder / "big.img").write_bytes(data)
    code, _, body = fetch(client_for(ImageServer(folder)), "/images/big.img")
    assert code == 200 and body == data
