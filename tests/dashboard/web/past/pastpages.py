"""A page read that names its status when it is not the one expected."""


def page(client, url, status=200):
    response = client.get(url)
    assert response.status_code == status, response.content[:3000]
    return response.content.decode()
